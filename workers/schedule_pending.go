package workers

import (
	"context"
	"errors"
	"log/slog"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/levers9/levers9/internal/scheduler"
)

// SchedulePendingArgs asks for a pass over every queue with unplaced
// pending jobs: the safety net for a lost signal or a pass that ran out of
// retries. River enqueues it periodically on the leader replica.
type SchedulePendingArgs struct{}

// Kind of the SchedulePendingArgs.
func (SchedulePendingArgs) Kind() string { return "schedule_pending" }

// InsertOpts of the SchedulePendingArgs: one at a time, so slow passes
// never pile up; a failed one just waits for the next tick.
func (SchedulePendingArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue:       QueueScheduling,
		MaxAttempts: 1,
		UniqueOpts: river.UniqueOpts{ByState: []rivertype.JobState{
			rivertype.JobStateAvailable, rivertype.JobStatePending,
			rivertype.JobStateRunning, rivertype.JobStateScheduled,
		}},
	}
}

// SchedulePendingWorker schedules the queues in turn, here rather than by
// enqueueing passes: River's periodic jobs already run on one replica only.
type SchedulePendingWorker struct {
	river.WorkerDefaults[SchedulePendingArgs]
	Scheduler *scheduler.Service
	Log       *slog.Logger
}

// Work schedules every queue with pending jobs.
func (w *SchedulePendingWorker) Work(ctx context.Context, _ *river.Job[SchedulePendingArgs]) error {
	ids, err := w.Scheduler.PendingQueues(ctx)
	if err != nil {
		return err
	}
	var errs []error
	placed := 0
	for _, id := range ids {
		n, err := w.Scheduler.ScheduleQueue(ctx, id)
		placed += n
		errs = append(errs, err)
	}
	if placed > 0 {
		w.Log.Info("periodic scheduling placed jobs", "queues", len(ids), "placed", placed)
	}
	return errors.Join(errs...)
}

// schedulePendingDue says whether the pass would find a queue to schedule,
// by its own first read: with no pending job it would do nothing.
func schedulePendingDue(s *scheduler.Service) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		ids, err := s.PendingQueues(ctx)
		return len(ids) > 0, err
	}
}
