// Package joblog stores the output of jobs and serves it to followers: the
// lines an agent ships are stored (so history survives restarts) and then
// signalled, so subscribers on any replica read them in order.
package joblog

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/logline"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// Append stores lines that attempt attempt of job jobID wrote, through c.
// Lines are keyed by (job, attempt, seq), so a batch the agent resends after
// a reconnect is stored once and a retry's lines never collide with the
// earlier attempt's. Callers publish notify.TopicJob after the commit.
func Append(ctx context.Context, c *ent.Client, jobID string, attempt int, lines []wire.LogLine) error {
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
	// One transaction for the batch: a commit per chunk would make the
	// commits, not the rows, the cost of a chatty job.
	tx, err := c.Tx(sys)
	if err != nil {
		return fmt.Errorf("storing logs of job %s: %w", jobID, err)
	}
	builders := make([]*ent.LogLineCreate, len(lines))
	for i, l := range lines {
		builders[i] = tx.LogLine.Create().
			SetTenantID(j.TenantID).SetEnvironmentID(j.EnvironmentID).
			SetJobID(jobID).SetAttempt(attempt).SetService(l.Service).SetStream(logline.Stream(l.Stream)).
			SetSeq(int64(l.Seq)).SetTime(l.Time).SetText(l.Text)
	}
	for start := 0; start < len(builders); start += insertChunk {
		err := tx.LogLine.CreateBulk(builders[start:min(start+insertChunk, len(builders))]...).
			OnConflictColumns(logline.FieldJobID, logline.FieldAttempt, logline.FieldSeq).DoNothing().
			Exec(sys)
		if err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("storing logs of job %s: %w", jobID, err)
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
