package billing

import (
	"testing"
	"time"
)

func TestDueAndRunCost(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }
	const pm = 6 * Unit // 0.1 token per second
	for _, tc := range []struct {
		name    string
		end     *time.Time
		now     time.Duration
		charged int64
		want    []Tokens
		closed  bool
	}{
		{"running, under a minute", nil, 59 * time.Second, 0, nil, false},
		{"running, two minutes", nil, 2*time.Minute + time.Second, 0, []Tokens{pm, pm}, false},
		{"running, one charged", nil, 2*time.Minute + time.Second, 1, []Tokens{pm}, false},
		{"ended mid-minute", at(90 * time.Second), 5 * time.Minute, 0, []Tokens{pm, 3 * Unit}, true},
		{"ended, sub-second counts as a second", at(60*time.Second + 300*time.Millisecond), 2 * time.Minute, 1, []Tokens{Unit / 10}, true},
		{"ended on the minute", at(2 * time.Minute), 3 * time.Minute, 0, []Tokens{pm, pm}, true},
		{"ended in the future", at(10 * time.Minute), time.Minute, 0, []Tokens{pm}, false},
		{"all charged", at(90 * time.Second), 5 * time.Minute, 2, nil, true},
	} {
		due, closed := Due(t0, tc.end, t0.Add(tc.now), tc.charged, pm)
		var got []Tokens
		for i, d := range due {
			got = append(got, d.Tokens)
			if d.Index != tc.charged+int64(i) {
				t.Errorf("%s: minute %d has index %d", tc.name, i, d.Index)
			}
		}
		if closed != tc.closed || len(got) != len(tc.want) {
			t.Errorf("%s: due %v closed %v; want %v closed %v", tc.name, got, closed, tc.want, tc.closed)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: due %v, want %v", tc.name, got, tc.want)
			}
		}
	}
	if got := RunCost(pm, 90*time.Second); got != 9*Unit {
		t.Errorf("RunCost(90s) = %v", got)
	}
}
