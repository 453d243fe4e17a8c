// Package joblog stores the output of jobs and serves it to followers: the
// lines an agent ships are stored (so history survives restarts) and then
// signalled, so subscribers on any replica read them in order.
package joblog

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/logline"
	"github.com/levers9/levers9/internal/database"
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
}

// Running is the number of this service's follows in progress.
func (s *Service) Running() int64 { return s.running.Load() }

// Append stores lines that attempt attempt of job jobID wrote. Lines are
// keyed by (job, attempt, seq), so a batch the agent resends after a
// reconnect is stored once and a retry's lines never collide with the
// earlier attempt's. Callers publish notify.TopicJob after the commit.
func (s *Service) Append(ctx context.Context, jobID string, attempt int, lines []wire.LogLine) error {
	c := s.DB.Ent
	if len(lines) == 0 {
		return nil
	}
	if attempt < 1 {
		return fmt.Errorf("storing logs of job %s: attempt %d: attempts start at 1", jobID, attempt)
	}
	sys := viewer.SystemContext(ctx)
	j, err := c.Job.Query().Where(job.ID(jobID)).Select(job.FieldTenantID, job.FieldEnvironmentID).Only(sys)
	if err != nil {
		return fmt.Errorf("finding job %s for its logs: %w", jobID, err)
	}
	if len(lines) <= insertChunk {
		// One statement: atomic by itself, and the common case of a job
		// printing a little costs no more than it did.
		return insert(sys, c, j, jobID, attempt, lines)
	}
	// One transaction for the batch: a commit per chunk would make the
	// commits, not the rows, the cost of a chatty job.
	tx, err := c.Tx(sys)
	if err != nil {
		return fmt.Errorf("storing logs of job %s: %w", jobID, err)
	}
	for start := 0; start < len(lines); start += insertChunk {
		if err := insert(sys, tx.Client(), j, jobID, attempt, lines[start:min(start+insertChunk, len(lines))]); err != nil {
			_ = tx.Rollback()
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("storing logs of job %s: %w", jobID, err)
	}
	return nil
}

// insertChunk is the most rows of one INSERT: 10 columns each, within
// SQLite's 32766 and PostgreSQL's 65535 parameters.
const insertChunk = 1000

// insert stores lines of job j in one statement; a line stored already
// (a resend) is skipped.
func insert(ctx context.Context, c *ent.Client, j *ent.Job, jobID string, attempt int, lines []wire.LogLine) error {
	builders := make([]*ent.LogLineCreate, len(lines))
	for i, l := range lines {
		builders[i] = c.LogLine.Create().
			SetTenantID(j.TenantID).SetEnvironmentID(j.EnvironmentID).
			SetJobID(jobID).SetAttempt(attempt).SetService(l.Service).SetStream(logline.Stream(l.Stream)).
			SetSeq(int64(l.Seq)).SetTime(l.Time).SetText(l.Text)
	}
	err := c.LogLine.CreateBulk(builders...).
		OnConflictColumns(logline.FieldJobID, logline.FieldAttempt, logline.FieldSeq).DoNothing().
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("storing logs of job %s: %w", jobID, err)
	}
	return nil
}
