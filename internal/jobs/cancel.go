package jobs

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/jobs/jobstate"
	"github.com/levers9/levers9/internal/viewer"
)

// Cancel cancels a job that has not ended. Members cancel their own jobs,
// tenant admins any job of the tenant.
func (s *Service) Cancel(ctx context.Context, id string) (*ent.Job, error) {
	v := viewer.FromContext(ctx)
	var j *ent.Job
	err := s.DB.InTx(ctx, func(tx *database.Tx) error {
		var err error
		if j, err = tx.Ent.Job.Get(ctx, id); err != nil {
			return err
		}
		if !owns(v, j) {
			return fault.New(fault.Forbidden, "only the job's owner or a tenant admin may cancel it")
		}
		if Ended(j.Status) {
			return fault.Invalid("id", "job %s has already ended (%s)", j.ID, j.Status)
		}
		if _, err := s.end(ctx, tx, jobstate.Cancelled, j.ID, j, 0, "cancelled by "+ActorName(ctx, tx.Ent, v), s.Now()); err != nil {
			return fmt.Errorf("cancelling job %s: %w", id, err)
		}
		j, err = tx.Ent.Job.Get(ctx, id)
		return err
	})
	if err == nil {
		s.signal(ctx, id)
	}
	return j, err
}
