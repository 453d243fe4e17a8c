package nodes

import "time"

// FenceAfter is how long an agent cut off from the server lets its jobs
// run before it freezes them (wire.Welcome.FenceAfterMs): before TTL plus
// grace, when the server may fail or requeue them and start another
// attempt elsewhere, by a margin of a quarter of that (at least 5 s) for
// clocks that run at different rates and the time a freeze takes; never
// before the TTL, when a flaky link has not yet cost the node anything.
// The agent counts from a heartbeat the server recorded, and the server
// from when it recorded it, so the agent's count starts first.
func FenceAfter(ttl, grace time.Duration) time.Duration {
	if ttl <= 0 {
		ttl = DefaultNodeTTL
	}
	total := ttl + max(grace, 0)
	return max(total-max(total/4, 5*time.Second), ttl)
}

// FenceAfter is FenceAfter for this liveness's TTL and grace.
func (l *Liveness) FenceAfter() time.Duration { return FenceAfter(l.ttl(), l.Grace) }
