package workers

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/levers9/levers9/internal/functions"
)

// ReconcileFunctionsArgs asks for one pass of the functions' safety net:
// containers whose job ended are marked stopped and their calls retried,
// calls past their deadline fail, and each function is scaled to its
// backlog and floor. Calls and runners wake each other directly; this
// pass only catches what no signal reported.
type ReconcileFunctionsArgs struct{}

// Kind of the ReconcileFunctionsArgs.
func (ReconcileFunctionsArgs) Kind() string { return "reconcile_functions" }

// ReconcileFunctionsWorker runs reconcile passes.
type ReconcileFunctionsWorker struct {
	river.WorkerDefaults[ReconcileFunctionsArgs]
	Functions *functions.Service
	Log       *slog.Logger
}

// Work runs one pass.
func (w *ReconcileFunctionsWorker) Work(ctx context.Context, _ *river.Job[ReconcileFunctionsArgs]) error {
	if err := w.Functions.Reconcile(ctx); err != nil {
		return fmt.Errorf("reconciling functions: %w", err)
	}
	return nil
}

// Timeout keeps a stuck pass from blocking the next ones.
func (w *ReconcileFunctionsWorker) Timeout(*river.Job[ReconcileFunctionsArgs]) time.Duration {
	return time.Minute
}

// reconcileFunctionsEvery is the period of the safety net.
const reconcileFunctionsEvery = 5 * time.Second
