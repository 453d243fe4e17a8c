package metering

import (
	"context"
	"fmt"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/metrics"
	"github.com/levers9/levers9/internal/queues"
	"github.com/levers9/levers9/internal/viewer"
)

// Started fixes the prices of job j, which started running at at, and
// charges its start fee, once per attempt. Call it through c in the
// transaction that marks the job running, with j read in it after that,
// with its services.
func Started(ctx context.Context, c *ent.Client, j *ent.Job, at time.Time) error {
	sys := viewer.SystemContext(ctx)
	jobID := j.ID
	q, err := c.Queue.Get(sys, j.QueueID)
	if err != nil {
		return fmt.Errorf("loading queue of job %s: %w", jobID, err)
	}
	svcs, err := j.Edges.ServicesOrErr()
	if err != nil {
		return fmt.Errorf("pricing job %s: %w", jobID, err)
	}
	rates := queues.Rates(q)
	perMinute, err := billing.PerMinute(rates, usage(svcs))
	if err != nil {
		return fmt.Errorf("pricing job %s: %w", jobID, err)
	}
	// Update, not UpdateOne: ent reads an updated node back, a statement
	// more on every job's start.
	if err := c.Job.Update().Where(job.ID(jobID)).SetRates(rates).SetPricePerMinute(perMinute).Exec(sys); err != nil {
		return fmt.Errorf("fixing prices of job %s: %w", jobID, err)
	}
	if rates.StartFee > 0 {
		if err := chargeStartFee(ctx, c, j, rates, at); err != nil {
			return err
		}
	}
	// Under `stop`, a job whose first minute its payer cannot hold has its
	// billing closed at once; the budget policy then cancels it.
	j.PricePerMinute = perMinute
	held, err := budgetsOf(ctx, c, []*ent.Job{j})
	if err != nil {
		return err
	}
	if b := held.of(j); b == nil || b.start(j) {
		return nil
	}
	if err := c.Job.UpdateOneID(jobID).SetMeteringClosed(true).Exec(sys); err != nil {
		return fmt.Errorf("closing metering of job %s: %w", jobID, err)
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
