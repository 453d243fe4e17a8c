package timewindow_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/timewindow"
)

// TestWindowSpread: something present over part of a step counts for that
// part; the current step counts only its time so far.
func TestWindowSpread(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	w := timewindow.Window{From: t0, Step: time.Hour, Steps: 3, Now: t0.Add(2*time.Hour + 30*time.Minute)}
	for _, tc := range []struct {
		name     string
		from, to time.Time
		weight   float64
		want     string
	}{
		{"a whole step", t0, t0.Add(time.Hour), 2, "[2 0 0]"},
		{"half of one, all of the next", t0.Add(30 * time.Minute), t0.Add(2 * time.Hour), 1, "[0.5 1 0]"},
		{"the current step so far", t0.Add(2 * time.Hour), t0.Add(3 * time.Hour), 4, "[0 0 4]"},
		{"before the window", t0.Add(-2 * time.Hour), t0.Add(-time.Hour), 1, "[0 0 0]"},
		{"ends before it starts", t0.Add(time.Hour), t0, 1, "[0 0 0]"},
	} {
		per := make([]float64, 3)
		w.Spread(per, tc.from, tc.to, tc.weight)
		if got := fmt.Sprint(per); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if got := fmt.Sprint(w.Elapsed(0), w.Elapsed(2), w.Elapsed(3)); got != "1 0.5 0" {
		t.Errorf("elapsed parts %s, want 1 0.5 0", got)
	}
	if l := timewindow.LastHours(t0.Add(20*time.Minute), 24); !l.End().Equal(t0.Add(time.Hour)) || l.Steps != 24 {
		t.Errorf("LastHours: from %v to %v", l.From, l.End())
	}
}
