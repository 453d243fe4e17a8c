package nodes

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
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
	// Heard, when set, is when the control plane began to hear nodes, as
	// if checked then (tests that model a server up all along); zero:
	// from the first check.
	Heard time.Time
	// MaxGap is the longest time between two checks that still counts as
	// one stretch of hearing (0: three sweep intervals); a longer gap means
	// the server could not run its periodic work, and starts a new one.
	MaxGap time.Duration

	once sync.Once
	hear hearing
}

// Every is how often the liveness check runs: often enough that a node
// goes offline soon after its TTL (within a third of it, at most 10 s),
// never more than once a second.
func (l *Liveness) Every() time.Duration {
	return min(max(l.ttl()/3, time.Second), 10*time.Second)
}

func (l *Liveness) ttl() time.Duration {
	if l.TTL <= 0 {
		return DefaultNodeTTL
	}
	return l.TTL
}

// MaxGapInForce is the longest time between two checks that still counts
// as one stretch of hearing.
func (l *Liveness) MaxGapInForce() time.Duration {
	if l.MaxGap > 0 {
		return l.MaxGap
	}
	return 3 * l.Every()
}

// heardSince records a check at now and returns since when the control
// plane has heard nodes without a break.
func (l *Liveness) heardSince(now time.Time) time.Time {
	l.once.Do(func() {
		if !l.Heard.IsZero() {
			l.hear.start(l.Heard)
		}
	})
	return l.hear.check(now, l.MaxGapInForce())
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

// Sweep runs one pass, counting silence within this replica's own checks.
// Running it twice, or on two replicas, is harmless: every change is
// conditional on the state it expects.
func (l *Liveness) Sweep(ctx context.Context) (SweepResult, error) {
	now := l.Now()
	return l.sweep(ctx, now, l.heardSince(now))
}

// SweepHeard runs one pass for a check made elsewhere (the replica that
// runs periodic work) that found the control plane hearing nodes since
// heard.
func (l *Liveness) SweepHeard(ctx context.Context, heard time.Time) (SweepResult, error) {
	return l.sweep(ctx, l.Now(), heard)
}

func (l *Liveness) sweep(ctx context.Context, now, heard time.Time) (SweepResult, error) {
	var res SweepResult
	w := l.window(now, heard)
	offline, err := l.markOffline(ctx, w)
	res.Offline = offline
	if err != nil {
		return res, err
	}
	res.Failed, res.Requeued, err = l.loseJobs(ctx, w, now)
	return res, err
}

// window is what a check at now may act on.
type window struct {
	ttl time.Duration
	// stale is the heartbeat before which an online node is silent, lostAt
	// the one before which an offline node's jobs are lost (the grace
	// later); silent and lost say whether the control plane heard nodes
	// long enough for either to apply at all.
	stale, lostAt time.Time
	silent, lost  bool
}

// window is the window at now for a control plane that has heard nodes
// since heard: a node's silence counts from its last heartbeat or heard,
// whichever is later.
func (l *Liveness) window(now, heard time.Time) window {
	grace := max(l.Grace, 0)
	w := window{ttl: l.ttl(), stale: now.Add(-l.ttl())}
	w.lostAt = w.stale.Add(-grace)
	w.silent, w.lost = heard.Before(w.stale), heard.Before(w.lostAt)
	return w
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

// markOffline marks offline the online nodes silent since before w.stale
// and wakes their queues' schedulers; it returns how many it marked.
func (l *Liveness) markOffline(ctx context.Context, w window) (int, error) {
	if !w.silent {
		return 0, nil
	}
	sys := viewer.SystemContext(ctx)
	silent := silentSince(w.stale)
	gone, err := l.DB.Ent.Node.Query().Where(silent).IDs(sys)
	if err != nil {
		l.hear.failed()
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
			l.Log.Warn("node offline: no heartbeat", "node", id, "ttl", w.ttl)
			wakeQueues(ctx, l.DB.Ent, l.Bus, l.Log, id)
		}
	}
	return marked, nil
}

// loseJobs has the jobs on nodes offline and silent since before
// w.lostAt lost, and counts those that failed and those requeued.
func (l *Liveness) loseJobs(ctx context.Context, w window, now time.Time) (failed, requeued int, err error) {
	if !w.lost {
		return 0, 0, nil
	}
	sys := viewer.SystemContext(ctx)
	lost, err := l.DB.Ent.Node.Query().
		Where(lostSince(w.lostAt)).
		IDs(sys)
	if err != nil {
		l.hear.failed()
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
