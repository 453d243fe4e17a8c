package tunnel

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
)

// Liveness defaults.
const (
	DefaultNodeTTL   = 30 * time.Second
	DefaultNodeGrace = 60 * time.Second
)

// Liveness marks nodes that stopped heartbeating offline and, after a grace
// period to reconnect, fails or requeues the jobs they ran.
type Liveness struct {
	DB   *database.DB
	Jobs *jobs.Service
	Bus  *notify.Bus
	Log  *slog.Logger
	Now  func() time.Time
	// TTL is how long a node may go without a heartbeat before it is
	// offline; Grace how long its jobs wait after that for it to return.
	TTL, Grace time.Duration
}

// SweepResult says what one sweep did.
type SweepResult struct {
	Offline, Failed, Requeued int
}

// Sweep runs one pass. Running it twice, or on two replicas, is harmless:
// every change is conditional on the state it expects.
func (l *Liveness) Sweep(ctx context.Context) (SweepResult, error) {
	var res SweepResult
	sys := viewer.SystemContext(ctx)
	now := l.Now()
	ttl, grace := l.TTL, l.Grace
	if ttl <= 0 {
		ttl = DefaultNodeTTL
	}
	if grace < 0 {
		grace = 0
	}
	stale := now.Add(-ttl)
	gone, err := l.DB.Ent.Node.Query().
		Where(node.StatusEQ(node.StatusOnline), node.Or(node.LastHeartbeatAtIsNil(), node.LastHeartbeatAtLT(stale))).
		IDs(sys)
	if err != nil {
		return res, fmt.Errorf("finding silent nodes: %w", err)
	}
	for _, id := range gone {
		n, err := l.DB.Ent.Node.Update().
			Where(node.ID(id), node.StatusEQ(node.StatusOnline), node.Or(node.LastHeartbeatAtIsNil(), node.LastHeartbeatAtLT(stale))).
			SetStatus(node.StatusOffline).Save(sys)
		if err != nil {
			return res, fmt.Errorf("marking node %s offline: %w", id, err)
		}
		if n > 0 {
			res.Offline++
			l.Log.Warn("node offline: no heartbeat", "node", id, "ttl", ttl)
			publishQueues(ctx, &Server{DB: l.DB, Bus: l.Bus, Log: l.Log}, id)
		}
	}

	lost, err := l.DB.Ent.Node.Query().
		Where(node.StatusEQ(node.StatusOffline), node.Or(node.LastHeartbeatAtIsNil(), node.LastHeartbeatAtLT(stale.Add(-grace)))).
		IDs(sys)
	if err != nil || len(lost) == 0 {
		return res, err
	}
	svcs, err := l.DB.Ent.Service.Query().
		// Pending jobs too: placed (or sent) but never started there, they
		// would otherwise wait for the node forever.
		Where(service.NodeIDIn(lost...), service.HasJobWith(job.StatusIn(job.StatusPending, job.StatusRunning))).
		Select(service.FieldJobID).Strings(sys)
	if err != nil {
		return res, fmt.Errorf("finding jobs on lost nodes: %w", err)
	}
	seen := map[string]bool{}
	for _, id := range svcs {
		if seen[id] {
			continue
		}
		seen[id] = true
		requeued, err := l.Jobs.NodeLost(ctx, id, now)
		if err != nil {
			return res, err
		}
		if requeued {
			res.Requeued++
		} else {
			res.Failed++
		}
	}
	return res, nil
}
