package metering

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/viewer"
)

// Admit is the `stop` policy's rule for a new job of payer p that needs
// need (its start fee and first minute): it is admitted only while the
// payer's balance covers need on top of what its jobs are committed to
// already, the minute each running job holds and the start fee and first
// minute of each pending one. Without the pending ones, each submission
// checked the balance alone and a payer whose node was down could queue
// any number of jobs that all started once it came back. It locks the
// payer's balance for the rest of c's transaction, so concurrent
// submissions take turns; the caller inserts the job in that transaction.
// It returns the balance and what is committed when need does not fit.
func Admit(ctx context.Context, c *ent.Client, p ledger.Payer, need billing.Tokens) (ok bool, balance, committed billing.Tokens, err error) {
	balance, err = ledger.LockedBalanceOf(viewer.SystemContext(ctx), c, p)
	if err != nil {
		return false, 0, 0, err
	}
	held, err := heldBy(ctx, c, p)
	if err != nil {
		return false, 0, 0, err
	}
	pending, err := pendingBy(ctx, c, p)
	if err != nil {
		return false, 0, 0, err
	}
	committed = held + pending
	return balance-committed >= need, balance, committed, nil
}

// pendingBy sums the start fees and first minutes of the payer's pending
// jobs, as estimated at their submission. A requeued job whose first
// attempt paid its fee is counted with it too: the bound errs on the safe
// side.
func pendingBy(ctx context.Context, c *ent.Client, p ledger.Payer) (billing.Tokens, error) {
	q := c.Job.Query().Where(job.TenantID(p.TenantID), job.StatusEQ(job.StatusPending))
	payerJobs(q, p)
	var rows []struct {
		Fee *int64 `json:"fee"`
		Min *int64 `json:"min"`
	}
	err := q.Aggregate(ent.As(ent.Sum(job.FieldEstimateStartFee), "fee"), ent.As(ent.Sum(job.FieldEstimatePerMinute), "min")).
		Scan(viewer.SystemContext(ctx), &rows)
	if err != nil {
		return 0, fmt.Errorf("summing what pending jobs of %s commit: %w", p, err)
	}
	var sum billing.Tokens
	for _, r := range rows {
		if r.Fee != nil {
			sum += billing.Tokens(*r.Fee)
		}
		if r.Min != nil {
			sum += billing.Tokens(*r.Min)
		}
	}
	return sum, nil
}

// payerJobs narrows q to the jobs payer p pays for.
func payerJobs(q *ent.JobQuery, p ledger.Payer) {
	if p.ProjectID != "" {
		q.Where(job.ProjectID(p.ProjectID))
		return
	}
	q.Where(job.OwnerID(p.UserID), job.Or(job.ProjectIDIsNil(), job.ProjectID("")))
}
