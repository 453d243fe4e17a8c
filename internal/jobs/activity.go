package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/viewer"
)

// MarkActive records that jobs jobIDs were used at at (relay traffic, an
// attached terminal, an exec), which puts off their idle stop. Only
// running jobs are marked, and only forward: a late, older batch of the
// relay never shortens an idle time. One UPDATE for all of them.
func (s *Service) MarkActive(ctx context.Context, jobIDs []string, at time.Time) error {
	if len(jobIDs) == 0 {
		return nil
	}
	err := s.DB.Ent.Job.Update().
		Where(job.IDIn(jobIDs...), job.StatusEQ(job.StatusRunning),
			job.Or(job.LastActiveAtIsNil(), job.LastActiveAtLT(at))).
		SetLastActiveAt(at).Exec(viewer.SystemContext(ctx))
	if err != nil {
		return fmt.Errorf("marking %d jobs active: %w", len(jobIDs), err)
	}
	return nil
}
