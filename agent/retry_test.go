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
		{minBackoff, maxBackoff, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second, 5 * time.Second}},
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

// An agent reconnects within 5 s of the server answering again, however
// long the outage lasted: a longer wait lost the race with the server's
// liveness sweep. The capped waits stay jittered, so agents cut off
// together do not all come back in the same instant.
func TestReconnectBackoffCap(t *testing.T) {
	t.Parallel()
	const most = 5 * time.Second
	var least, longest time.Duration = time.Hour, 0
	for range 1000 { // agents cut off at the same moment
		b := jittered(minBackoff, maxBackoff)
		for i := range 30 { // a long outage: far past the doubling
			got := b.NextBackOff()
			if got <= 0 || got > most {
				t.Fatalf("wait %d: %v, want at most %v", i, got, most)
			}
			if i >= 10 { // at the cap
				least, longest = min(least, got), max(longest, got)
			}
		}
	}
	if least < most/2 || longest-least < most/4 {
		t.Fatalf("capped waits span %v to %v, want jittered between %v and %v", least, longest, most/2, most)
	}
}
