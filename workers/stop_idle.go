package workers

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/levers9/levers9/internal/jobs"
)

// StopIdleArgs asks for one idle sweep: interactive jobs idle near their
// queue's idle timeout are warned, those past it stopped. River enqueues
// it every minute on the leader replica; running it twice is harmless.
type StopIdleArgs struct{}

// Kind of the StopIdleArgs.
func (StopIdleArgs) Kind() string { return "stop_idle" }

// StopIdleWorker runs idle sweeps at the jobs service's clock.
type StopIdleWorker struct {
	river.WorkerDefaults[StopIdleArgs]
	Jobs *jobs.Service
	Log  *slog.Logger
}

// Work runs one sweep.
func (w *StopIdleWorker) Work(ctx context.Context, _ *river.Job[StopIdleArgs]) error {
	warned, stopped, err := w.Jobs.IdleSweep(ctx, w.Jobs.Now())
	if err != nil {
		return fmt.Errorf("stopping idle jobs: %w", err)
	}
	w.Log.Debug("idle sweep", "warned", warned, "stopped", stopped)
	return nil
}

// Timeout keeps a stuck sweep from blocking the next ones.
func (w *StopIdleWorker) Timeout(*river.Job[StopIdleArgs]) time.Duration { return time.Minute }
