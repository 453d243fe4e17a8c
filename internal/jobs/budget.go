package jobs

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/jobs/jobstate"
	"github.com/levers9/levers9/internal/ledger"
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
