// Package joblog stores the output of jobs and serves it to followers: the
// lines an agent ships are stored (so history survives restarts) and then
// signalled, so subscribers on any replica read them in order.
package joblog

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/metrics"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// Service stores the output of jobs and serves it: reads, and follows that
// the bus wakes.
type Service struct {
	DB *database.DB
	// Bus, when set, wakes followers when a job changes; without it they
	// poll.
	Bus *notify.Bus
	// Log is where follows report how they failed, unless their Options
	// name another logger.
	Log *slog.Logger
	// running counts follow goroutines, so tests and metrics can see that
	// dropped and cancelled followers really end.
	running atomic.Int64
	// hubs are the readers of followed attempts (hub.go).
	hubs hubSet
}

// Running is the number of this service's follows in progress.
func (s *Service) Running() int64 { return s.running.Load() }

// Batch is lines that attempt Attempt of job JobID wrote, in seq order.
type Batch struct {
	JobID   string
	Attempt int
	Lines   []wire.LogLine
}

// Append stores lines that attempt attempt of job jobID wrote. Lines are
// keyed by (job, attempt, seq), so a batch the agent resends after a
// reconnect is stored once and a retry's lines never collide with the
// earlier attempt's. Callers publish notify.TopicJob after the commit.
func (s *Service) Append(ctx context.Context, jobID string, attempt int, lines []wire.LogLine) error {
	return s.AppendAll(ctx, []Batch{{JobID: jobID, Attempt: attempt, Lines: lines}})
}

// AppendAll is Append of several batches in one transaction (group
// commit: a commit per batch would make the commits, not the rows, the
// cost of chatty jobs). Batches are stored in the order given; all or
// none are stored.
func (s *Service) AppendAll(ctx context.Context, batches []Batch) error {
	n := 0
	for _, b := range batches {
		n += len(b.Lines)
	}
	if n == 0 {
		return nil
	}
	return s.DB.InTx(ctx, func(tx *database.Tx) error { return s.AppendTx(ctx, tx, batches) })
}

// AppendTx is AppendAll in the caller's transaction tx, so lines can
// commit together with the reports that came with them.
func (s *Service) AppendTx(ctx context.Context, tx *database.Tx, batches []Batch) error {
	owners := map[string]owner{}
	owned := make([]ownedBatch, 0, len(batches))
	for _, b := range batches {
		if len(b.Lines) == 0 {
			continue
		}
		if b.Attempt < 1 {
			return fmt.Errorf("storing logs of job %s: attempt %d: attempts start at 1", b.JobID, b.Attempt)
		}
		if err := checkLines(b.JobID, b.Lines); err != nil {
			return err
		}
		o, ok := owners[b.JobID]
		if !ok {
			j, err := tx.Ent.Job.Query().Where(job.ID(b.JobID)).
				Select(job.FieldTenantID, job.FieldEnvironmentID).Only(viewer.SystemContext(ctx))
			if err != nil {
				return fmt.Errorf("finding job %s for its logs: %w", b.JobID, err)
			}
			o = owner{tenant: j.TenantID, environment: j.EnvironmentID}
			owners[b.JobID] = o
		}
		owned = append(owned, ownedBatch{Batch: b, owner: o})
	}
	if len(owned) == 0 {
		return nil
	}
	in := &inserter{tx: tx.SQL, dialect: s.DB.Dialect}
	defer in.close()
	if err := in.store(ctx, owned); err != nil {
		return err
	}
	for _, b := range owned {
		metrics.LogLinesIngested.Add(float64(len(b.Lines)))
	}
	return nil
}
