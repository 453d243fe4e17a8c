package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/jobevent"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/metering"
	"github.com/levers9/levers9/internal/viewer"
)

// MarkRunning records that job id started running at at: its prices are
// fixed and its start fee charged in the same transaction.
func (s *Service) MarkRunning(ctx context.Context, id string, at time.Time) error {
	sys := viewer.SystemContext(ctx)
	defer s.signal(ctx, id)
	return s.DB.InTx(ctx, func(tx *database.Tx) error {
		n, err := tx.Ent.Job.Update().
			Where(job.ID(id), job.StatusEQ(job.StatusPending)).
			SetStatus(job.StatusRunning).SetStatusReason("running").SetStartedAt(at).
			Save(sys)
		if err != nil {
			return fmt.Errorf("marking job %s running: %w", id, err)
		}
		if n == 0 {
			return nil // not pending any more: cancelled meanwhile, or started already
		}
		err = tx.Ent.Service.Update().
			Where(service.JobID(id), service.StatusEQ(service.StatusPending)).
			SetStatus(service.StatusRunning).SetStartedAt(at).Exec(sys)
		if err != nil {
			return fmt.Errorf("marking services of job %s running: %w", id, err)
		}
		j, err := tx.Ent.Job.Get(sys, id)
		if err != nil {
			return err
		}
		if err := recordEvent(ctx, tx.Ent, j, "", jobevent.StatusRunning, "running", at); err != nil {
			return err
		}
		return metering.Started(sys, tx.Ent, id, at)
	})
}

// MarkEnded records that job id ended at at with status (COMPLETE, ERROR or
// CANCELLED) and reason, and charges its last partial minute.
func (s *Service) MarkEnded(ctx context.Context, id string, status job.Status, reason string, at time.Time) error {
	defer s.signal(ctx, id)
	return s.DB.InTx(ctx, func(tx *database.Tx) error {
		return s.end(ctx, tx, id, status, reason, at)
	})
}

// end ends a job inside tx and has its capacity scheduled again.
func (s *Service) end(ctx context.Context, tx *database.Tx, id string, status job.Status, reason string, at time.Time) error {
	if err := end(ctx, tx.Ent, id, status, reason, at); err != nil {
		return err
	}
	if s.Freed != nil {
		if err := s.Freed(ctx, tx.SQL, id); err != nil {
			return fmt.Errorf("scheduling capacity freed by job %s: %w", id, err)
		}
	}
	return nil
}

// end moves a job that has not ended to status, through c.
func end(ctx context.Context, c *ent.Client, id string, status job.Status, reason string, at time.Time) error {
	sys := viewer.SystemContext(ctx)
	n, err := c.Job.Update().
		Where(job.ID(id), job.StatusIn(job.StatusPending, job.StatusRunning)).
		SetStatus(status).SetStatusReason(reason).SetFinishedAt(at).
		Save(sys)
	if err != nil {
		return fmt.Errorf("ending job %s: %w", id, err)
	}
	if n == 0 {
		return nil // ended already
	}
	err = c.Service.Update().
		Where(service.JobID(id), service.StatusIn(service.StatusPending, service.StatusRunning)).
		SetStatus(service.Status(status)).SetStatusReason(reason).SetFinishedAt(at).
		Exec(sys)
	if err != nil {
		return fmt.Errorf("ending services of job %s: %w", id, err)
	}
	j, err := c.Job.Get(sys, id)
	if err != nil {
		return err
	}
	if err := recordEvent(ctx, c, j, "", jobevent.Status(status), reason, at); err != nil {
		return err
	}
	if _, err := metering.ChargeRun(sys, c, j, at); err != nil {
		return err
	}
	return nil
}
