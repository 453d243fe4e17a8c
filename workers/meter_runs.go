package workers

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/riverqueue/river"

	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/metering"
)

// MeterRunsArgs asks for one tick of the run-time meter. River enqueues it
// every minute on the leader replica; running it twice is harmless.
type MeterRunsArgs struct{}

// Kind of the MeterRunsArgs.
func (MeterRunsArgs) Kind() string { return "meter_runs" }

// MeterRunsWorker charges running jobs for their minutes, then applies
// budget policies to the payers it charged and plans the stops of jobs
// whose payer cannot hold their next minute.
type MeterRunsWorker struct {
	river.WorkerDefaults[MeterRunsArgs]
	Meter *metering.Meter
	Jobs  *jobs.Service
	Log   *slog.Logger
}

// Work runs one tick.
func (w *MeterRunsWorker) Work(ctx context.Context, _ *river.Job[MeterRunsArgs]) error {
	res, err := w.Meter.Tick(ctx)
	if err != nil {
		return fmt.Errorf("metering runs: %w", err)
	}
	stopped, err := w.Jobs.EnforceBudgets(ctx, res.Payers)
	if err != nil {
		return fmt.Errorf("enforcing budgets: %w", err)
	}
	if err := planStops(ctx, res.Stops); err != nil {
		return err
	}
	w.Log.Debug("metered runs", "jobs", res.Jobs, "charges", res.Charges, "stopped", len(stopped))
	return nil
}
