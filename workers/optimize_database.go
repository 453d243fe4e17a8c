package workers

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/levers9/levers9/internal/database"
)

// OptimizeDatabaseArgs asks SQLite to refresh its planner's statistics
// (database.Optimize).
type OptimizeDatabaseArgs struct{}

// Kind of the OptimizeDatabaseArgs.
func (OptimizeDatabaseArgs) Kind() string { return "optimize_database" }

// OptimizeDatabaseWorker refreshes them.
type OptimizeDatabaseWorker struct {
	river.WorkerDefaults[OptimizeDatabaseArgs]
	DB *database.DB
}

// Work runs one refresh: SQLite analyzes only the tables that grew much
// since their last analysis, within a bounded effort.
func (w *OptimizeDatabaseWorker) Work(ctx context.Context, _ *river.Job[OptimizeDatabaseArgs]) error {
	return w.DB.Optimize(ctx)
}

// optimizeDatabaseEvery is its period (SQLite's advice: every few hours;
// its first run, at open, is the database's own).
const optimizeDatabaseEvery = time.Hour
