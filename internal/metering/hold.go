package metering

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/viewer"
)

// Holding the next minute. Under the `stop` budget policy every running paid
// job holds the minute it is in: a minute is charged when it ends, so its
// tokens must still be there then. A job may start a minute (its first, at
// start, or the next, at each minute boundary) only if the payer's balance
// less the minutes all its other jobs hold covers it; otherwise its billing
// ends at that boundary (its metering is closed there, and the budget policy
// then cancels it "out of tokens"). Run time therefore only ever spends
// tokens that were there when its minute began: compute never takes a
// balance below zero. Only a start fee can, when one is charged on a balance
// already held by other jobs' minutes.

// budget is what one payer under `stop` has left while its jobs are metered.
type budget struct {
	balance billing.Tokens // the ledger balance, less what this pass charged
	held    billing.Tokens // the minutes its open paid jobs hold
}

// budgets are the payers under `stop` of some jobs.
type budgets map[ledger.Payer]*budget

// budgetsOf loads, through c, the budgets of the payers of jobs whose tenant
// stops jobs that run out of tokens. Free jobs need none.
func budgetsOf(ctx context.Context, c *ent.Client, jobs []*ent.Job) (budgets, error) {
	sys := viewer.SystemContext(ctx)
	tenants := map[string]bool{}
	for _, j := range jobs {
		if paid(j) {
			tenants[j.TenantID] = true
		}
	}
	if len(tenants) == 0 {
		return nil, nil
	}
	ids := make([]string, 0, len(tenants))
	for id := range tenants {
		ids = append(ids, id)
	}
	stopping, err := c.Tenant.Query().
		Where(tenant.IDIn(ids...), tenant.BudgetPolicyEQ(tenant.BudgetPolicyStop)).IDs(sys)
	if err != nil {
		return nil, fmt.Errorf("loading budget policies: %w", err)
	}
	stops := map[string]bool{}
	for _, id := range stopping {
		stops[id] = true
	}
	// Payers in one order, so two meters locking the same payers never
	// wait for each other in a cycle.
	var payers []ledger.Payer
	for _, j := range jobs {
		p := payerOf(j)
		if !paid(j) || !stops[j.TenantID] || slices.Contains(payers, p) {
			continue
		}
		payers = append(payers, p)
	}
	slices.SortFunc(payers, func(a, b ledger.Payer) int { return strings.Compare(a.String(), b.String()) })
	out := budgets{}
	for _, p := range payers {
		bal, err := ledger.LockedBalanceOf(sys, c, p)
		if err != nil {
			return nil, err
		}
		held, err := heldBy(ctx, c, p)
		if err != nil {
			return nil, err
		}
		out[p] = &budget{balance: bal, held: held}
	}
	return out, nil
}

// paid reports whether job j costs anything once started: a price per
// minute or a start fee.
func paid(j *ent.Job) bool {
	return j.PricePerMinute > 0 || j.EstimatePerMinute > 0 || j.EstimateStartFee > 0
}

// heldBy sums the per-minute prices of the payer's open jobs: each holds the
// minute it is in (or, ended and not yet closed, its last part of one).
func heldBy(ctx context.Context, c *ent.Client, p ledger.Payer) (billing.Tokens, error) {
	q := c.Job.Query().Where(job.TenantID(p.TenantID), meteringOpen(), job.StartedAtNotNil(), job.PricePerMinuteGT(0))
	payerJobs(q, p)
	var rows []struct {
		Sum *int64 `json:"sum"`
	}
	if err := q.Aggregate(ent.As(ent.Sum(job.FieldPricePerMinute), "sum")).Scan(viewer.SystemContext(ctx), &rows); err != nil {
		return 0, fmt.Errorf("summing minutes held by %s: %w", p, err)
	}
	if len(rows) == 0 || rows[0].Sum == nil {
		return 0, nil
	}
	return billing.Tokens(*rows[0].Sum), nil
}

// of is the budget job j is metered against, nil when it runs on regardless.
func (b budgets) of(j *ent.Job) *budget {
	if j.PricePerMinute <= 0 {
		return nil
	}
	return b[payerOf(j)]
}

// spare is what the payer has beyond the minutes its jobs other than j hold
// (j, open, is counted in held).
func (b *budget) spare(j *ent.Job) billing.Tokens {
	return b.balance - (b.held - j.PricePerMinute)
}

// start reports whether open job j may pay fee and begin its first minute.
// A job that may not is closed by the caller, unpaid; it holds nothing.
func (b *budget) start(j *ent.Job, fee billing.Tokens) bool {
	if b.spare(j)-fee >= j.PricePerMinute {
		b.balance -= fee
		return true
	}
	b.held -= j.PricePerMinute
	return false
}

// hold walks the minutes due for open job j (closed: its run ended with the
// last of them) and cuts them at the first boundary after which the payer
// cannot hold another minute. It returns the minutes to charge, whether the
// run is then fully charged, and the boundary it was stopped at, if it was.
func (b *budget) hold(j *ent.Job, due []billing.MinuteCharge, closed bool) ([]billing.MinuteCharge, bool, *time.Time) {
	spare := b.spare(j)
	var stop *time.Time
	for i, d := range due {
		// Charging the minute uses what it held.
		spare -= d.Tokens
		b.balance -= d.Tokens
		if closed && i == len(due)-1 {
			break // ended: nothing after this to hold
		}
		// The run goes on past d.End: it must hold its next minute.
		if spare < j.PricePerMinute {
			end := d.End
			due, closed, stop = due[:i+1], true, &end
			break
		}
	}
	if closed {
		b.held -= j.PricePerMinute
	}
	return due, closed, stop
}
