package workers

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/levers9/levers9/internal/functions"
)

// FireSchedulesArgs asks for one pass over the CRON functions: every due
// tick runs (or is skipped while the previous run goes on). River's
// leader runs it; the compare-and-set in functions.FireSchedules makes a
// tick fire once even when two passes meet (a leader change).
type FireSchedulesArgs struct{}

// Kind of the FireSchedulesArgs.
func (FireSchedulesArgs) Kind() string { return "fire_schedules" }

// FireSchedulesWorker runs cron passes.
type FireSchedulesWorker struct {
	river.WorkerDefaults[FireSchedulesArgs]
	Functions *functions.Service
	Log       *slog.Logger
}

// Work runs one pass.
func (w *FireSchedulesWorker) Work(ctx context.Context, _ *river.Job[FireSchedulesArgs]) error {
	n, err := w.Functions.FireSchedules(ctx)
	if err != nil {
		return fmt.Errorf("firing schedules (%d fired): %w", n, err)
	}
	return nil
}

// Timeout keeps a stuck pass from blocking the next ones.
func (w *FireSchedulesWorker) Timeout(*river.Job[FireSchedulesArgs]) time.Duration {
	return time.Minute
}

// wholeMinutes is the schedule of the cron passes: cron's unit is the
// minute, so every tick falls due on a whole minute, and a pass just after
// it runs the tick at once. An idle server looks once a minute instead of
// every few seconds (each look is a River job: an insert, a fetch, a
// completion).
type wholeMinutes struct{}

// Next is the first whole minute after t.
func (wholeMinutes) Next(t time.Time) time.Time { return t.Truncate(time.Minute).Add(time.Minute) }
