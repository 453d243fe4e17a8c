package workers

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/riverqueue/river"

	"github.com/levers9/levers9/internal/buckets"
	"github.com/levers9/levers9/internal/metering"
)

// MeterStorageArgs asks for one tick of the storage meter, hourly.
type MeterStorageArgs struct{}

// Kind of the MeterStorageArgs.
func (MeterStorageArgs) Kind() string { return "meter_storage" }

// MeterStorageWorker charges buckets for the hours they were stored.
type MeterStorageWorker struct {
	river.WorkerDefaults[MeterStorageArgs]
	Meter *metering.Meter
	// Files, when set, measures buckets before they are charged.
	Files *buckets.Files
	Log   *slog.Logger
}

// Work runs one tick.
func (w *MeterStorageWorker) Work(ctx context.Context, _ *river.Job[MeterStorageArgs]) error {
	if w.Files != nil {
		// A bucket that cannot be measured is charged at its last size:
		// better than not charging it, and the next hour tries again.
		if n, err := w.Files.Measure(ctx); err != nil {
			w.Log.Warn("measuring buckets", "measured", n, "err", err)
		}
	}
	res, err := w.Meter.TickStorage(ctx)
	if err != nil {
		return fmt.Errorf("metering storage: %w", err)
	}
	w.Log.Debug("metered storage", "buckets", res.Jobs, "charges", res.Charges)
	return nil
}
