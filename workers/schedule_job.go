// Package workers holds levers9's River job kinds, one per file: the args
// and the worker that does the work by calling the domain packages.
package workers

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"

	"github.com/riverqueue/river"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/internal/viewer"
)

// ScheduleJobArgs asks for a pending job to be placed on a node.
type ScheduleJobArgs struct {
	JobID string `json:"job_id"`
}

// Kind of the ScheduleJobArgs.
func (ScheduleJobArgs) Kind() string { return "schedule_job" }

// InsertOpts of the ScheduleJobArgs: scheduling has its own queue so that
// slow work elsewhere never delays a start.
func (ScheduleJobArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueScheduling, MaxAttempts: 10}
}

// ScheduleJobWorker places a pending job. Until nodes can join (the agent
// and its tunnel), it records why the job waits, in words a person can act
// on.
type ScheduleJobWorker struct {
	river.WorkerDefaults[ScheduleJobArgs]
	Ent *ent.Client
	Log *slog.Logger
}

// Work places the job of args, or records why it must wait.
func (w *ScheduleJobWorker) Work(ctx context.Context, rj *river.Job[ScheduleJobArgs]) error {
	ctx = viewer.SystemContext(ctx)
	j, err := w.Ent.Job.Query().Where(job.ID(rj.Args.JobID)).WithQueue().Only(ctx)
	if ent.IsNotFound(err) {
		return nil // deleted since: nothing to place
	}
	if err != nil {
		return fmt.Errorf("scheduling job %s: %w", rj.Args.JobID, err)
	}
	if j.Status != job.StatusPending {
		return nil
	}
	q := j.Edges.Queue
	total, err := w.Ent.Queue.QueryNodes(q).Count(ctx)
	if err != nil {
		return fmt.Errorf("scheduling job %s: counting nodes: %w", j.ID, err)
	}
	online, err := w.Ent.Queue.QueryNodes(q).Where(node.StatusEQ(node.StatusOnline)).Count(ctx)
	if err != nil {
		return fmt.Errorf("scheduling job %s: counting online nodes: %w", j.ID, err)
	}
	reason := fmt.Sprintf("waiting for a node in queue %s: %d of %d nodes are online", q.Name, online, total)
	if err := w.Ent.Job.UpdateOneID(j.ID).SetStatusReason(reason).Exec(ctx); err != nil {
		return fmt.Errorf("scheduling job %s: %w", j.ID, err)
	}
	w.Log.Debug("job waits", "job", j.ID, "reason", reason)
	return nil
}

// QueueScheduling is the River queue of scheduling work.
const QueueScheduling = "scheduling"

// InsertScheduleJob returns the function jobs.Service calls to enqueue
// scheduling inside the submitting transaction.
func InsertScheduleJob(c *river.Client[*sql.Tx]) func(context.Context, *sql.Tx, string) error {
	return func(ctx context.Context, tx *sql.Tx, jobID string) error {
		_, err := c.InsertTx(ctx, tx, ScheduleJobArgs{JobID: jobID}, nil)
		return err
	}
}
