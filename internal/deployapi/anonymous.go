package deployapi

import (
	"sync"

	"github.com/levers9/levers9/internal/fault"
)

// DefaultMaxAnonymousRequests is how many requests callers without a
// token may have in flight at once to one public deployment on one
// replica: a relayed WebSocket or box request lives as long as the caller
// keeps it, and an endpoint call waits up to its sync timeout, each
// holding a connection and a goroutine (and, relayed, a tunnel stream).
// Without a bound an anonymous caller could open them until the server
// runs out of file descriptors. Callers with a token are not counted:
// they are accountable, and their tenant's limits apply.
const DefaultMaxAnonymousRequests = 512

// inflight counts anonymous requests per function.
type inflight struct {
	mu   sync.Mutex
	max  int
	open map[string]int
}

// enter takes a place for a request to function fnID, or refuses it
// RATE_LIMITED when all are taken; release gives the place back.
func (g *inflight) enter(fnID, name string) (release func(), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open[fnID] >= g.max {
		return nil, fault.New(fault.RateLimited, "%s has %d requests without a token in flight: try again later", name, g.max)
	}
	if g.open == nil {
		g.open = map[string]int{}
	}
	g.open[fnID]++
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.open[fnID]--; g.open[fnID] <= 0 {
				delete(g.open, fnID)
			}
		})
	}, nil
}
