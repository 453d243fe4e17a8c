package nodes

import (
	"testing"
	"time"
)

// An agent freezes its jobs before the server may start them elsewhere,
// with a margin, but not before its node would go offline.
func TestFenceAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ ttl, grace, want time.Duration }{
		{5 * time.Second, 30 * time.Second, 26250 * time.Millisecond}, // 35 s less a quarter
		{30 * time.Second, 60 * time.Second, 67500 * time.Millisecond},
		{5 * time.Second, 5 * time.Second, 5 * time.Second},  // 10 s less 5 s
		{10 * time.Second, 0, 10 * time.Second},              // never before the TTL
		{0, 0, DefaultNodeTTL},                               // the default TTL
		{2 * time.Second, 10 * time.Second, 7 * time.Second}, // 12 s less 5 s
	} {
		if got := FenceAfter(tc.ttl, tc.grace); got != tc.want {
			t.Errorf("FenceAfter(%s, %s) = %s, want %s", tc.ttl, tc.grace, got, tc.want)
		}
	}
}
