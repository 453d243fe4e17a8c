package metering

import (
	"context"
	"fmt"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/metrics"
	"github.com/levers9/levers9/internal/queues"
	"github.com/levers9/levers9/internal/viewer"
)

// Prices are job j's rates and the price of a minute of its services
// (read with j) from a start now: its queue's rates at this moment. The
// caller stores them with the job's start, in the update that marks it
// running (a statement less on every job's start than an update of its
// own), then calls Started.
func Prices(ctx context.Context, c *ent.Client, j *ent.Job) (billing.Rates, billing.Tokens, error) {
	q, err := c.Queue.Get(viewer.SystemContext(ctx), j.QueueID)
	if err != nil {
		return billing.Rates{}, 0, fmt.Errorf("loading queue of job %s: %w", j.ID, err)
	}
	svcs, err := j.Edges.ServicesOrErr()
	if err != nil {
		return billing.Rates{}, 0, fmt.Errorf("pricing job %s: %w", j.ID, err)
	}
	rates := queues.Rates(q)
	perMinute, err := billing.PerMinute(rates, usage(svcs))
	if err != nil {
		return billing.Rates{}, 0, fmt.Errorf("pricing job %s: %w", j.ID, err)
	}
	return rates, perMinute, nil
}

// Started charges the start fee of job j, which started running at at
// with the prices Prices gave (stored, and set in j), and under `stop`
// first checks that its payer can pay it and hold the first minute on top
// of the minutes its other jobs hold: if not, the job's billing is closed
// unpaid (unpaid is true) and the caller stops the job at once, so a start
// never takes a balance below zero. Call it through c in the transaction that marks the
// job running.
//
// The fee is charged once per job: an attempt after the first runs
// because the platform lost the job's node (the only cause of a new
// attempt), so it is charged again only if no earlier attempt paid it (one
// lost before it started).
func Started(ctx context.Context, c *ent.Client, j *ent.Job, at time.Time) (unpaid bool, err error) {
	sys := viewer.SystemContext(ctx)
	fee, err := feeDue(ctx, c, j)
	if err != nil {
		return false, err
	}
	held, err := budgetsOf(ctx, c, []*ent.Job{j})
	if err != nil {
		return false, err
	}
	if b := held[payerOf(j)]; b != nil && !b.start(j, fee) {
		if err := c.Job.UpdateOneID(j.ID).SetMeteringClosed(true).Exec(sys); err != nil {
			return false, fmt.Errorf("closing metering of job %s: %w", j.ID, err)
		}
		j.MeteringClosed = true
		return true, nil
	}
	if fee > 0 {
		return false, chargeStartFee(ctx, c, j, j.Rates, at)
	}
	return false, nil
}

// feeDue is the start fee job j's current attempt owes: none when an
// earlier attempt paid it.
func feeDue(ctx context.Context, c *ent.Client, j *ent.Job) (billing.Tokens, error) {
	if j.Rates.StartFee <= 0 {
		return 0, nil
	}
	if j.Attempt <= 1 {
		return j.Rates.StartFee, nil
	}
	paid, err := c.Charge.Query().Where(charge.JobID(j.ID), charge.KindEQ(charge.KindStart)).Exist(viewer.SystemContext(ctx))
	if err != nil {
		return 0, fmt.Errorf("looking for the start fee of job %s: %w", j.ID, err)
	}
	if paid {
		return 0, nil
	}
	return j.Rates.StartFee, nil
}

func chargeStartFee(ctx context.Context, c *ent.Client, j *ent.Job, rates billing.Rates, at time.Time) error {
	sys := viewer.SystemContext(ctx)
	b := c.Charge.Create().
		SetTenantID(j.TenantID).SetJobID(j.ID).SetUserID(j.OwnerID).
		SetKind(charge.KindStart).SetTokens(rates.StartFee).SetRates(rates).
		SetPeriodStart(at).SetPeriodEnd(at).SetReason(feeReason(j)).
		SetIdempotencyKey(fmt.Sprintf("start:%s:%d", j.ID, j.Attempt))
	setPayer(b, payerOf(j))
	if err := b.OnConflictColumns(charge.FieldIdempotencyKey).DoNothing().Exec(sys); err != nil {
		return fmt.Errorf("charging start fee of job %s: %w", j.ID, err)
	}
	metrics.Charged(string(charge.KindStart), 1, int64(rates.StartFee))
	return nil
}

// feeReason says why job j's current attempt pays a start fee.
func feeReason(j *ent.Job) string {
	if j.Attempt <= 1 {
		return "start fee"
	}
	return fmt.Sprintf("start fee at attempt %d: no earlier attempt started", j.Attempt)
}
