package workers

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/levers9/levers9/internal/scheduler"
)

// QueueScheduling is the River queue of scheduling work.
const QueueScheduling = "scheduling"

// ScheduleQueueArgs asks for one scheduling pass over a queue. Passes are
// per queue, not per job, so a burst of submissions coalesces into one.
type ScheduleQueueArgs struct {
	QueueID string `json:"queue_id"`
	// Window is the backup window of the changes the pass backs up (see
	// backupWindow): one pass per queue and window.
	Window int64 `json:"window,omitempty"`
}

// Kind of the ScheduleQueueArgs.
func (ScheduleQueueArgs) Kind() string { return "schedule_queue" }

// InsertOpts of the ScheduleQueueArgs: scheduling has its own queue so slow
// work elsewhere never delays a start, and at most one pass per queue and
// key is waiting or running. Retryable is left out (River allows only that)
// so a failed pass backing off never holds back a fresh one.
func (ScheduleQueueArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue:       QueueScheduling,
		MaxAttempts: 10,
		UniqueOpts: river.UniqueOpts{
			ByArgs: true,
			ByState: []rivertype.JobState{
				rivertype.JobStateAvailable, rivertype.JobStatePending,
				rivertype.JobStateRunning, rivertype.JobStateScheduled,
			},
		},
	}
}

// ScheduleQueueWorker runs scheduling passes.
type ScheduleQueueWorker struct {
	river.WorkerDefaults[ScheduleQueueArgs]
	Scheduler *scheduler.Service
	Log       *slog.Logger
}

// Work runs one pass over the queue of args.
func (w *ScheduleQueueWorker) Work(ctx context.Context, rj *river.Job[ScheduleQueueArgs]) error {
	placed, err := w.Scheduler.ScheduleQueue(ctx, rj.Args.QueueID)
	if err != nil {
		return err
	}
	if placed > 0 {
		w.Log.Info("placed jobs", "queue", rj.Args.QueueID, "placed", placed)
	}
	return nil
}

// NextRetry retries a failed pass soon: failures are mostly a concurrent
// writer, and pending jobs should not wait River's long backoff.
func (w *ScheduleQueueWorker) NextRetry(rj *river.Job[ScheduleQueueArgs]) time.Time {
	return time.Now().Add(time.Duration(rj.Attempt) * time.Second)
}

// BackupDelay is how long a backup window lasts and how long after it its
// pass starts (see backupWindow). The committing replica signals the
// in-process scheduler right after commit (scheduler.Run), which places at
// once; the River pass is only the backstop for a replica that dies
// between commit and signal, so it waits long enough that under load one
// backup pass per queue covers every change of those seconds instead of
// one more pass per change.
const BackupDelay = 3 * time.Second

// InsertScheduleQueue enqueues, in tx, the backup pass over queueID of
// the current window, unless it is known to be waiting already (see
// pendingPasses).
func InsertScheduleQueue(ctx context.Context, rc *Clients, tx *sql.Tx, queueID string) error {
	w := backupWindow(rc.now())
	if rc.passes.covers(queueID, w) {
		return nil
	}
	opts := &river.InsertOpts{ScheduledAt: backupAt(w)}
	res, err := rc.Inserter.InsertTx(ctx, tx, ScheduleQueueArgs{QueueID: queueID, Window: w}, opts)
	if err != nil {
		return fmt.Errorf("enqueueing scheduling of queue %s: %w", queueID, err)
	}
	rc.passes.saw(queueID, w, res)
	return nil
}

// ScheduleQueues enqueues a pass over each of queueIDs in one transaction.
func ScheduleQueues(ctx context.Context, rc *Clients, db *sql.DB, queueIDs []string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("enqueueing scheduling: %w", err)
	}
	defer tx.Rollback()
	for _, id := range queueIDs {
		if err := InsertScheduleQueue(ctx, rc, tx, id); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("enqueueing scheduling: %w", err)
	}
	return nil
}

// InsertScheduleNode returns the function to call, in the transaction that
// brings a node online (joined or back), to enqueue passes over its queues.
func InsertScheduleNode(rc *Clients) func(context.Context, *sql.Tx, string) error {
	return func(ctx context.Context, tx *sql.Tx, nodeID string) error {
		return insertForQuery(ctx, rc, tx, "SELECT queue_id FROM queue_nodes WHERE node_id = $1", nodeID)
	}
}

// InsertScheduleFreed returns the function to call, in the transaction that
// ends a job, to enqueue passes over every queue that can use what the job
// frees: its own and those of the nodes it was placed on. The nodes are
// found from the job's services: as a join, SQLite's planner drove it from
// queue_nodes and read every service the node ever ran (a job's end cost
// grew with the node's history; TestSchedulingReadsNoHistory).
func InsertScheduleFreed(rc *Clients) func(context.Context, *sql.Tx, string) error {
	return func(ctx context.Context, tx *sql.Tx, jobID string) error {
		return insertForQuery(ctx, rc, tx, `SELECT queue_id FROM jobs WHERE id = $1
			UNION SELECT queue_id FROM queue_nodes WHERE node_id IN (SELECT node_id FROM services WHERE job_id = $1)`, jobID)
	}
}

// insertForQuery enqueues a pass over each queue query returns for arg.
func insertForQuery(ctx context.Context, rc *Clients, tx *sql.Tx, query, arg string) error {
	rows, err := tx.QueryContext(ctx, query, arg)
	if err != nil {
		return fmt.Errorf("finding queues to schedule for %s: %w", arg, err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("finding queues to schedule for %s: %w", arg, err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("finding queues to schedule for %s: %w", arg, err)
	}
	for _, id := range ids {
		if err := InsertScheduleQueue(ctx, rc, tx, id); err != nil {
			return err
		}
	}
	return nil
}

// InsertScheduleJob returns the function jobs.Service calls to enqueue
// scheduling of a submitted job inside the submitting transaction: a pass
// over the job's queue.
func InsertScheduleJob(rc *Clients) func(context.Context, *sql.Tx, string) error {
	return func(ctx context.Context, tx *sql.Tx, jobID string) error {
		var queueID string
		// $1 is understood by both drivers (SQLite reads it as parameter 1).
		if err := tx.QueryRowContext(ctx, "SELECT queue_id FROM jobs WHERE id = $1", jobID).Scan(&queueID); err != nil {
			return fmt.Errorf("finding the queue of job %s: %w", jobID, err)
		}
		return InsertScheduleQueue(ctx, rc, tx, queueID)
	}
}
