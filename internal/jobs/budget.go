package jobs

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/jobs/jobstate"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/metering"
	"github.com/levers9/levers9/internal/viewer"
)

// OutOfTokens is the reason of jobs stopped by the `stop` budget policy.
const OutOfTokens = "out of tokens"

// EnforceBudgets applies each tenant's budget policy to payers: under
// `stop`, running jobs the meter stopped billing (their payer could not hold
// their next minute), or all paid ones when the balance is used up, are
// cancelled with reason "out of tokens"; under `finish` jobs run on into the
// red. It returns the jobs it stopped.
func (s *Service) EnforceBudgets(ctx context.Context, payers []ledger.Payer) ([]string, error) {
	sys := viewer.SystemContext(ctx)
	var stopped []string
	for _, p := range payers {
		t, err := s.DB.Ent.Tenant.Get(sys, p.TenantID)
		if err != nil {
			return stopped, fmt.Errorf("loading tenant %s: %w", p.TenantID, err)
		}
		// Jobs whose billing the meter ended (their payer could not hold
		// their next minute) always stop; with nothing left, all paid ones.
		all := false
		if t.BudgetPolicy == tenant.BudgetPolicyStop {
			bal, err := ledger.BalanceOf(sys, s.DB.Ent, p)
			if err != nil {
				return stopped, err
			}
			all = bal <= 0
		}
		// Free jobs spend nothing: only paid ones stop.
		q := s.DB.Ent.Job.Query().Where(job.TenantID(p.TenantID), job.StatusEQ(job.StatusRunning), job.PricePerMinuteGT(0))
		if !all {
			q.Where(job.MeteringClosed(true))
		}
		if p.ProjectID != "" {
			q.Where(job.ProjectID(p.ProjectID))
		} else {
			q.Where(job.OwnerID(p.UserID), job.ProjectIDIsNil())
		}
		ids, err := q.IDs(sys)
		if err != nil {
			return stopped, fmt.Errorf("listing running jobs of %s: %w", p, err)
		}
		now := s.Now()
		for _, id := range ids {
			err := s.DB.InTx(ctx, func(tx *database.Tx) error {
				_, err := s.end(ctx, tx, jobstate.OutOfTokens, id, nil, 0, OutOfTokens, now)
				return err
			})
			if err != nil {
				return stopped, err
			}
			s.signal(ctx, id)
			stopped = append(stopped, id)
		}
		if len(ids) > 0 {
			s.Log.Info("stopped jobs: payer out of tokens", "payer", p.String(), "jobs", len(ids))
		}
	}
	return stopped, nil
}

// StopUnpaid stops job id, running at attempt, "out of tokens" now when its
// payer (under `stop`) cannot hold its next minute: the meter plans this a
// little ahead of the minute's boundary (metering.Stop), so the job ends
// within the minute it paid for. It charges the minutes due first, and
// decides on the payer's balance locked; a job whose payer can hold the
// minute by now (a grant came) runs on. stopped is false then, and for a
// job no longer running at attempt.
func (s *Service) StopUnpaid(ctx context.Context, id string, attempt int) (stopped bool, err error) {
	at := s.Now()
	err = s.DB.InTx(ctx, func(tx *database.Tx) error {
		sys := viewer.SystemContext(ctx)
		if _, err := metering.ChargeRun(sys, tx.Ent, id, at); err != nil {
			return fmt.Errorf("charging job %s: %w", id, err)
		}
		j, err := tx.Ent.Job.Get(sys, id)
		if err != nil {
			return fmt.Errorf("loading job %s: %w", id, err)
		}
		if j.Status != job.StatusRunning || j.Attempt != attempt {
			return nil
		}
		if !j.MeteringClosed {
			if runsOn, err := metering.RunsOn(sys, tx.Ent, j); err != nil || runsOn {
				return err
			}
		}
		stopped, err = s.end(ctx, tx, jobstate.OutOfTokens, id, j, attempt, OutOfTokens, at)
		return err
	})
	if stopped {
		s.signal(ctx, id)
		s.Log.Info("stopped a job ahead of a minute its payer cannot pay", "job", id)
	}
	return stopped, err
}
