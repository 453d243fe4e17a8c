package workers

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/riverqueue/river"

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
	Log   *slog.Logger
}

// Work runs one tick.
func (w *MeterStorageWorker) Work(ctx context.Context, _ *river.Job[MeterStorageArgs]) error {
	res, err := w.Meter.TickStorage(ctx)
	if err != nil {
		return fmt.Errorf("metering storage: %w", err)
	}
	w.Log.Debug("metered storage", "buckets", res.Jobs, "charges", res.Charges)
	return nil
}
