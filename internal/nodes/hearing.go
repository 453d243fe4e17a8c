package nodes

import (
	"sync"
	"time"
)

// hearing follows the stretch of time during which the control plane could
// hear nodes: the server ran and its database answered. A node's silence
// counts only within that stretch, so our own outage (a server restart, a
// database down) never makes a healthy node look lost. The stretch starts
// again at the first check after the server started, after a check that
// could not reach the database, and after a gap between checks longer than
// gap (the server was stopped, or could not run its periodic work).
type hearing struct {
	mu sync.Mutex
	// since is when the current stretch began; last the last check that
	// reached the database (zero: none, or the last one failed).
	since, last time.Time
}

// check records a check at now and returns when the stretch it belongs to
// began.
func (h *hearing) check(now time.Time, gap time.Duration) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last.IsZero() || now.Sub(h.last) > gap {
		h.since = now
	}
	h.last = now
	return h.since
}

// failed records that the check just made could not reach the database:
// the next one starts a new stretch.
func (h *hearing) failed() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = time.Time{}
}

// start makes since the beginning of a stretch checked last at since.
func (h *hearing) start(since time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.since, h.last = since, since
}
