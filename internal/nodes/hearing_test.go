package nodes

import (
	"testing"
	"time"
)

// TestHearing: a stretch of hearing starts at the first check, goes on
// while checks come within the gap, and starts again after a gap or a
// check that failed to reach the database.
func TestHearing(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	const gap = 10 * time.Second
	type step struct {
		at      int
		fail    bool // the check made at at could not reach the database
		stretch int  // when the stretch check returns began
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"first check starts it", []step{{at: 5, stretch: 5}, {at: 12, stretch: 5}, {at: 20, stretch: 5}}},
		{"a gap starts a new one", []step{{at: 0, stretch: 0}, {at: 10, stretch: 0}, {at: 21, stretch: 21}, {at: 25, stretch: 21}}},
		{"a failed check starts a new one at the next", []step{{at: 0, stretch: 0}, {at: 3, stretch: 0, fail: true}, {at: 6, stretch: 6}, {at: 9, stretch: 6}}},
		{"failures in a row", []step{{at: 0, stretch: 0}, {at: 3, stretch: 0, fail: true}, {at: 6, stretch: 6, fail: true}, {at: 60, stretch: 60}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var h hearing
			for _, s := range tc.steps {
				if got := h.check(at(s.at), gap); !got.Equal(at(s.stretch)) {
					t.Fatalf("check at %d s: stretch from %s, want %d s", s.at, got.Sub(t0), s.stretch)
				}
				if s.fail {
					h.failed()
				}
			}
		})
	}
}

// TestHearingStart: a stretch given as begun earlier goes on at the next
// check within the gap.
func TestHearingStart(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	var h hearing
	h.start(t0)
	if got := h.check(t0.Add(5*time.Second), 10*time.Second); !got.Equal(t0) {
		t.Fatalf("stretch from %s, want %s", got, t0)
	}
}
