package nodes

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/predicate"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/jobs/jobstate"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
)

// Liveness defaults.
const (
	DefaultNodeTTL   = 30 * time.Second
	DefaultNodeGrace = 60 * time.Second
)

// Liveness marks nodes that stopped heartbeating offline and, after a grace
// period to reconnect, has the jobs they ran lost.
type Liveness struct {
	DB   *database.DB
	Jobs LostJobs
	// Bus, when set, wakes the schedulers of an offline node's queues.
	Bus *notify.Bus
	Log *slog.Logger
	Now func() time.Time
	// TTL is how long a node may go without a heartbeat before it is
	// offline (0: DefaultNodeTTL); Grace how long its jobs wait after that
	// for it to return.
	TTL, Grace time.Duration
}

// LostJobs is the job state machine's transition for a job whose node is
// gone (jobs.Service). Liveness needs only that, so that nodes stays below
// jobs: the scheduler reads what nodes hold without depending on jobs.
type LostJobs interface {
	// NodeLost fails job id, or requeues it when it may run again.
	NodeLost(ctx context.Context, id string, now time.Time) (requeued bool, err error)
}

// SweepResult says what one sweep did.
type SweepResult struct {
	Offline, Failed, Requeued int
}

// Sweep runs one pass. Running it twice, or on two replicas, is harmless:
// every change is conditional on the state it expects.
func (l *Liveness) Sweep(ctx context.Context) (SweepResult, error) {
	var res SweepResult
	now := l.Now()
	ttl, stale, lostAt := l.window(now)
	offline, err := l.markOffline(ctx, stale, ttl)
	res.Offline = offline
	if err != nil {
		return res, err
	}
	res.Failed, res.Requeued, err = l.loseJobs(ctx, lostAt, now)
	return res, err
}

// window is the TTL in force and, at now, the heartbeat before which an
// online node is silent (stale) and an offline node's jobs are lost
// (lostAt: the grace later).
func (l *Liveness) window(now time.Time) (ttl time.Duration, stale, lostAt time.Time) {
	ttl, grace := l.TTL, l.Grace
	if ttl <= 0 {
		ttl = DefaultNodeTTL
	}
	if grace < 0 {
		grace = 0
	}
	stale = now.Add(-ttl)
	return ttl, stale, stale.Add(-grace)
}

// silentSince matches the online nodes silent since before stale.
func silentSince(stale time.Time) predicate.Node {
	return node.And(node.StatusEQ(node.StatusOnline), node.Or(node.LastHeartbeatAtIsNil(), node.LastHeartbeatAtLT(stale)))
}

// lostSince matches the offline nodes silent since before lostAt.
func lostSince(lostAt time.Time) predicate.Node {
	return node.And(node.StatusEQ(node.StatusOffline), node.Or(node.LastHeartbeatAtIsNil(), node.LastHeartbeatAtLT(lostAt)))
}

// onLostNodes matches the jobs a lost node takes down with it: pending or
// running jobs with a service on one of lost. Pending jobs too: placed (or
// sent) but never started there, they would otherwise wait for the node
// forever. The live jobs drive the read (their status index), each then
// looks for its services: from the nodes' side, it read every service the
// nodes ever ran (TestLivenessReadsNoHistory).
func onLostNodes(lost predicate.Service) predicate.Job {
	return job.And(jobstate.Live(), job.HasServicesWith(lost))
}

// markOffline marks offline the online nodes silent since before stale and
// wakes their queues' schedulers; it returns how many it marked.
func (l *Liveness) markOffline(ctx context.Context, stale time.Time, ttl time.Duration) (int, error) {
	sys := viewer.SystemContext(ctx)
	silent := silentSince(stale)
	gone, err := l.DB.Ent.Node.Query().Where(silent).IDs(sys)
	if err != nil {
		return 0, fmt.Errorf("finding silent nodes: %w", err)
	}
	marked := 0
	for _, id := range gone {
		// Conditional: a heartbeat since the query keeps the node online.
		n, err := l.DB.Ent.Node.Update().Where(node.ID(id), silent).SetStatus(node.StatusOffline).Save(sys)
		if err != nil {
			return marked, fmt.Errorf("marking node %s offline: %w", id, err)
		}
		if n > 0 {
			marked++
			l.Log.Warn("node offline: no heartbeat", "node", id, "ttl", ttl)
			wakeQueues(ctx, l.DB.Ent, l.Bus, l.Log, id)
		}
	}
	return marked, nil
}

// loseJobs has the jobs on nodes offline and silent since before lostAt
// lost, and counts those that failed and those requeued.
func (l *Liveness) loseJobs(ctx context.Context, lostAt, now time.Time) (failed, requeued int, err error) {
	sys := viewer.SystemContext(ctx)
	lost, err := l.DB.Ent.Node.Query().
		Where(lostSince(lostAt)).
		IDs(sys)
	if err != nil {
		return 0, 0, fmt.Errorf("finding lost nodes: %w", err)
	}
	if len(lost) == 0 {
		return 0, 0, nil
	}
	ids, err := l.DB.Ent.Job.Query().Where(onLostNodes(service.NodeIDIn(lost...))).IDs(sys)
	if err != nil {
		return 0, 0, fmt.Errorf("finding jobs on lost nodes: %w", err)
	}
	for _, id := range ids {
		back, err := l.Jobs.NodeLost(ctx, id, now)
		if err != nil {
			return failed, requeued, fmt.Errorf("losing job %s with its node: %w", id, err)
		}
		if back {
			requeued++
		} else {
			failed++
		}
	}
	return failed, requeued, nil
}
