package workers

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/levers9/levers9/internal/nodes"
)

// NodeLivenessArgs asks for one liveness sweep: silent nodes go offline,
// jobs of nodes gone past the grace fail or are requeued. River enqueues
// it every few seconds on the leader replica, after a check there found
// work; running it twice is harmless.
type NodeLivenessArgs struct {
	// Heard is since when the check found the control plane hearing
	// nodes, CheckedAt when it ran: the sweep may run on another replica,
	// which has not followed the hearing itself. Zero: the sweeping
	// replica's own.
	Heard     time.Time `json:"heard,omitzero"`
	CheckedAt time.Time `json:"checked_at,omitzero"`
}

// Kind of the NodeLivenessArgs.
func (NodeLivenessArgs) Kind() string { return "node_liveness" }

// NodeLivenessWorker runs sweeps.
type NodeLivenessWorker struct {
	river.WorkerDefaults[NodeLivenessArgs]
	Liveness *nodes.Liveness
	Log      *slog.Logger
}

// Work runs one sweep. A sweep that waited in the queue longer than the
// hearing's longest gap is skipped: the control plane may have been down
// meanwhile, which its check could not know (the next check catches up).
func (w *NodeLivenessWorker) Work(ctx context.Context, job *river.Job[NodeLivenessArgs]) error {
	var res nodes.SweepResult
	var err error
	switch a := job.Args; {
	case a.CheckedAt.IsZero():
		res, err = w.Liveness.Sweep(ctx)
	case w.Liveness.Now().Sub(a.CheckedAt) > w.Liveness.MaxGapInForce():
		w.Log.Info("node liveness: skipping a sweep checked too long ago", "checked", a.CheckedAt)
		return nil
	default:
		res, err = w.Liveness.SweepHeard(ctx, a.Heard)
	}
	if err != nil {
		return fmt.Errorf("node liveness: %w", err)
	}
	if res != (nodes.SweepResult{}) {
		w.Log.Info("node liveness", "offline", res.Offline, "failed", res.Failed, "requeued", res.Requeued)
	}
	return nil
}

// Timeout keeps a stuck sweep from blocking the next ones.
func (w *NodeLivenessWorker) Timeout(*river.Job[NodeLivenessArgs]) time.Duration { return time.Minute }

// livenessCheck is the periodic constructor of sweeps: it inserts one only
// when a check says a sweep would change something, carrying what the
// check found of the hearing. A failed check inserts one, as ifDue does.
func livenessCheck(l *nodes.Liveness, log *slog.Logger) river.PeriodicJobConstructor {
	return func() (river.JobArgs, *river.InsertOpts) {
		ctx, cancel := context.WithTimeout(context.Background(), dueCheckTimeout)
		defer cancel()
		c, err := l.Check(ctx)
		if err != nil {
			log.Warn("periodic check failed; running the pass", "kind", NodeLivenessArgs{}.Kind(), "error", err)
		} else if !c.Due {
			return nil, nil
		}
		return NodeLivenessArgs{Heard: c.Heard, CheckedAt: c.At}, nil
	}
}
