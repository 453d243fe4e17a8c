package tunnel

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/jobevent"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/metering"
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
		requeued, err := l.lose(ctx, id, now)
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

// lose ends or requeues job id whose node is gone.
func (l *Liveness) lose(ctx context.Context, id string, now time.Time) (requeued bool, err error) {
	sys := viewer.SystemContext(ctx)
	j, err := l.DB.Ent.Job.Get(sys, id)
	if err != nil {
		return false, fmt.Errorf("loading job %s: %w", id, err)
	}
	// A job that never started, or that asked for retries, goes back to
	// the scheduler.
	retry := j.Status == job.StatusPending || j.Attempt <= j.Retries
	// The run is billed up to the last moment its nodes proved it alive,
	// not through the TTL and grace it took to give up on them.
	alive, err := l.lastSignOfLife(ctx, id, now)
	if err != nil {
		return false, err
	}
	if !retry {
		l.Log.Warn("job lost with its node", "job", id, "billed_to", alive)
		if j.StartedAt != nil {
			err := l.DB.InTx(ctx, func(tx *database.Tx) error { return metering.Lost(sys, tx.Ent, j, alive) })
			if err != nil {
				return false, fmt.Errorf("charging lost job %s: %w", id, err)
			}
		}
		return false, l.Jobs.MarkEnded(ctx, id, job.StatusError, ReasonNodeLost, now)
	}
	reason := fmt.Sprintf("node lost; requeued (attempt %d of %d)", j.Attempt+1, j.Retries+1)
	attempt := j.Attempt + 1
	if j.Status == job.StatusPending {
		// Sent to the node, some of its services may have run and logged:
		// the next run is a new attempt, so its lines (numbered from 1)
		// never collide with those. Never sent: nothing ran, same attempt.
		sent, err := l.DB.Ent.Service.Query().Where(service.JobID(id), service.DispatchedAtNotNil()).Exist(sys)
		if err != nil {
			return false, fmt.Errorf("loading services of job %s: %w", id, err)
		}
		if sent {
			reason = fmt.Sprintf("node lost while the job started; requeued (attempt %d)", attempt)
		} else {
			reason, attempt = "node lost before the job started; requeued", j.Attempt
		}
	}
	err = l.DB.InTx(ctx, func(tx *database.Tx) error {
		// The run so far is charged; without a start time the meter leaves
		// the job alone until it runs again.
		if j.StartedAt != nil {
			if err := metering.CloseAttempt(sys, tx.Ent, j, alive); err != nil {
				return err
			}
		}
		n, err := tx.Ent.Job.Update().
			Where(job.ID(id), job.StatusEQ(j.Status)).
			SetStatus(job.StatusPending).SetStatusReason(reason).SetAttempt(attempt).ClearStartedAt().
			Save(sys)
		if err != nil || n == 0 {
			return err
		}
		err = tx.Ent.Service.Update().Where(service.JobID(id)).
			SetStatus(service.StatusPending).SetStatusReason(reason).
			ClearNodeID().ClearDispatchedAt().ClearStartedAt().ClearFinishedAt().ClearExitCode().ClearHostPorts().
			Exec(sys)
		if err != nil {
			return err
		}
		return tx.Ent.JobEvent.Create().
			SetTenantID(j.TenantID).SetEnvironmentID(j.EnvironmentID).
			SetJobID(id).SetService("").SetStatus(jobevent.StatusPending).SetReason(reason).SetAt(now).
			Exec(sys)
	})
	if err != nil {
		return true, fmt.Errorf("requeueing job %s: %w", id, err)
	}
	l.Log.Warn("job requeued: its node was lost", "job", id, "attempt", attempt)
	if l.Bus != nil {
		for _, p := range [][2]string{{notify.TopicJob, id}, {notify.TopicQueue, j.QueueID}} {
			if err := l.Bus.Publish(ctx, p[0], p[1]); err != nil {
				l.Log.Warn("signalling requeue", "job", id, "err", err)
			}
		}
	}
	return true, nil
}

// lastSignOfLife is the last heartbeat of the nodes job id runs on (at most
// now): the last moment they proved its run alive.
func (l *Liveness) lastSignOfLife(ctx context.Context, id string, now time.Time) (time.Time, error) {
	nodes, err := l.DB.Ent.Node.Query().
		Where(node.HasServicesWith(service.JobID(id)), node.LastHeartbeatAtNotNil()).
		All(viewer.SystemContext(ctx))
	if err != nil {
		return now, fmt.Errorf("loading nodes of job %s: %w", id, err)
	}
	var alive time.Time
	for _, n := range nodes {
		if n.LastHeartbeatAt.After(alive) {
			alive = *n.LastHeartbeatAt
		}
	}
	if alive.IsZero() || alive.After(now) {
		return now, nil
	}
	return alive, nil
}
