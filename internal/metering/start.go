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
// with the prices Prices gave (stored, and set in j), once per attempt,
// and under `stop` closes the billing of a job whose first minute its
// payer cannot hold. Call it through c in the transaction that marks the
// job running.
func Started(ctx context.Context, c *ent.Client, j *ent.Job, at time.Time) error {
	sys := viewer.SystemContext(ctx)
	if j.Rates.StartFee > 0 {
		if err := chargeStartFee(ctx, c, j, j.Rates, at); err != nil {
			return err
		}
	}
	// Under `stop`, a job whose first minute its payer cannot hold has its
	// billing closed at once; the budget policy then cancels it.
	held, err := budgetsOf(ctx, c, []*ent.Job{j})
	if err != nil {
		return err
	}
	if b := held.of(j); b == nil || b.start(j) {
		return nil
	}
	if err := c.Job.UpdateOneID(j.ID).SetMeteringClosed(true).Exec(sys); err != nil {
		return fmt.Errorf("closing metering of job %s: %w", j.ID, err)
	}
	return nil
}

func chargeStartFee(ctx context.Context, c *ent.Client, j *ent.Job, rates billing.Rates, at time.Time) error {
	sys := viewer.SystemContext(ctx)
	b := c.Charge.Create().
		SetTenantID(j.TenantID).SetJobID(j.ID).SetUserID(j.OwnerID).
		SetKind(charge.KindStart).SetTokens(rates.StartFee).SetRates(rates).
		SetPeriodStart(at).SetPeriodEnd(at).
		SetIdempotencyKey(fmt.Sprintf("start:%s:%d", j.ID, j.Attempt))
	setPayer(b, payerOf(j))
	if err := b.OnConflictColumns(charge.FieldIdempotencyKey).DoNothing().Exec(sys); err != nil {
		return fmt.Errorf("charging start fee of job %s: %w", j.ID, err)
	}
	metrics.Charged(string(charge.KindStart), 1, int64(rates.StartFee))
	return nil
}
