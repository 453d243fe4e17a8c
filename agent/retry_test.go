package agent

import (
	"testing"
	"time"
)

// Waits double from the least to the most, each drawn between half and all
// of its step.
func TestJitteredBackoff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		least, most time.Duration
		steps       []time.Duration // the step of each wait in turn
	}{
		{fileMinBackoff, fileMaxBackoff, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond, 5 * time.Second, 5 * time.Second}},
		{minBackoff, maxBackoff, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}},
	}
	for _, tc := range tests {
		for range 200 { // the draws are random: many rounds
			b := jittered(tc.least, tc.most)
			for round := range 2 { // and again after a reset
				b.Reset()
				for i, step := range tc.steps {
					if got := b.NextBackOff(); got < step/2 || got > step {
						t.Fatalf("round %d, wait %d: %v, want between %v and %v", round, i, got, step/2, step)
					}
				}
			}
		}
	}
}
