package workers

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/metering"
)

// StopUnpaidArgs asks for a running job to be stopped "out of tokens" ahead
// of a minute its payer cannot hold (metering.Stop). The meter inserts it,
// scheduled a little before the minute's boundary; unique per run, so the
// ticks before the boundary plan it once.
type StopUnpaidArgs struct {
	JobID   string `json:"job_id"`
	Attempt int    `json:"attempt"`
}

// Kind of the StopUnpaidArgs.
func (StopUnpaidArgs) Kind() string { return "stop_unpaid" }

// InsertOpts keep one planned stop per run of a job.
func (StopUnpaidArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByPeriod: time.Hour}}
}

// StopUnpaidWorker stops the job, unless its payer can hold the minute by
// now.
type StopUnpaidWorker struct {
	river.WorkerDefaults[StopUnpaidArgs]
	Jobs *jobs.Service
	Log  *slog.Logger
}

// Work stops the job when it must.
func (w *StopUnpaidWorker) Work(ctx context.Context, job *river.Job[StopUnpaidArgs]) error {
	if _, err := w.Jobs.StopUnpaid(ctx, job.Args.JobID, job.Args.Attempt); err != nil {
		return fmt.Errorf("stopping unpaid job %s: %w", job.Args.JobID, err)
	}
	return nil
}

// planStops inserts the stops a meter tick planned, from inside a worker
// of either driver's client.
func planStops(ctx context.Context, stops []metering.Stop) error {
	if len(stops) == 0 {
		return nil
	}
	params := make([]river.InsertManyParams, len(stops))
	for i, s := range stops {
		params[i] = river.InsertManyParams{Args: StopUnpaidArgs{JobID: s.JobID, Attempt: s.Attempt}, InsertOpts: &river.InsertOpts{ScheduledAt: s.At}}
	}
	var err error
	if c, cerr := river.ClientFromContextSafely[*sql.Tx](ctx); cerr == nil {
		_, err = c.InsertMany(ctx, params)
	} else if c, cerr := river.ClientFromContextSafely[pgx.Tx](ctx); cerr == nil {
		_, err = c.InsertMany(ctx, params)
	} else {
		err = errors.New("no River client in the worker's context")
	}
	if err != nil {
		return fmt.Errorf("planning %d stops of unpaid jobs: %w", len(stops), err)
	}
	return nil
}
