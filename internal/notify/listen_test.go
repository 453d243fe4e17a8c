package notify

import (
	"testing"
	"time"
)

// The listener waits 100 ms after losing its connection, twice as long
// after each further failure, and never more than 5 s.
func TestListenBackOff(t *testing.T) {
	t.Parallel()
	b := listenBackOff()
	for round := range 2 {
		b.Reset()
		for i, want := range []time.Duration{100, 200, 400, 800, 1600, 3200, 5000, 5000} {
			if got := b.NextBackOff(); got != want*time.Millisecond {
				t.Fatalf("round %d, wait %d: %v, want %v", round, i, got, want*time.Millisecond)
			}
		}
	}
}
