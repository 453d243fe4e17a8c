package workers

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/levers9/levers9/internal/blueprints"
)

// SettleBlueprintsArgs asks for one pass of the blueprints' safety net:
// a blueprint still BUILDING whose build job ended without its image is
// marked FAILED (reading one settles it too; this catches those nobody
// reads).
type SettleBlueprintsArgs struct{}

// Kind of the SettleBlueprintsArgs.
func (SettleBlueprintsArgs) Kind() string { return "settle_blueprints" }

// SettleBlueprintsWorker runs settle passes.
type SettleBlueprintsWorker struct {
	river.WorkerDefaults[SettleBlueprintsArgs]
	Blueprints *blueprints.Service
	Log        *slog.Logger
}

// Work runs one pass.
func (w *SettleBlueprintsWorker) Work(ctx context.Context, _ *river.Job[SettleBlueprintsArgs]) error {
	if err := w.Blueprints.Settle(ctx); err != nil {
		return fmt.Errorf("settling blueprints: %w", err)
	}
	return nil
}

// settleBlueprintsEvery is the period of the safety net.
const settleBlueprintsEvery = time.Minute
