package metering

import (
	"context"
	"fmt"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/metrics"
	"github.com/levers9/levers9/internal/viewer"
)

// Stopped bills job j, which ended (cancelled, failed, stopped idle) while
// its service svc still ran, for the time svc ran on: its node stopped it
// at at, seconds after the end that was charged. Each service's report
// bills what its stop adds beyond what the job's run was charged, so the
// run is billed to the last service's stop, to the second, once (the
// reports of one node are applied one at a time, and a replayed report
// adds nothing). at is the node's word, taken no later than now, the
// server's clock. Under `stop` the tail is billed only within the minute
// the job ended in, which its payer held: never past a balance.
//
// Runs the platform ended without the node (a lost node's, billed to its
// last sign of life) and runs stopped because their payer could not pay on
// (billed to the boundary they could pay) are the caller's to leave out.
func Stopped(ctx context.Context, c *ent.Client, j *ent.Job, svc string, at, now time.Time) error {
	if j.StartedAt == nil || j.FinishedAt == nil || j.PricePerMinute <= 0 {
		return nil
	}
	until := at
	if now.Before(until) {
		until = now
	}
	if !until.After(*j.FinishedAt) {
		return nil
	}
	sys := viewer.SystemContext(ctx)
	t, err := c.Tenant.Get(sys, j.TenantID)
	if err != nil {
		return fmt.Errorf("loading tenant of job %s: %w", j.ID, err)
	}
	if t.BudgetPolicy == tenant.BudgetPolicyStop {
		ran := j.FinishedAt.Sub(*j.StartedAt)
		held := j.StartedAt.Add((ran/time.Minute + 1) * time.Minute)
		if held.Before(until) {
			until = held
		}
	}
	cs, err := attemptCharges(ctx, c, j)
	if err != nil {
		return err
	}
	var charged billing.Tokens
	billedTo := *j.FinishedAt
	for _, ch := range cs {
		charged += ch.Tokens
		if ch.PeriodEnd != nil && ch.PeriodEnd.After(billedTo) {
			billedTo = *ch.PeriodEnd
		}
	}
	more := billing.RunCost(j.PricePerMinute, until.Sub(*j.StartedAt)) - charged
	if more <= 0 || !until.After(billedTo) {
		return nil
	}
	b := c.Charge.Create().
		SetTenantID(j.TenantID).SetJobID(j.ID).SetUserID(j.OwnerID).
		SetKind(charge.KindCompute).SetTokens(more).SetRates(j.Rates).
		SetPeriodStart(billedTo).SetPeriodEnd(until).
		SetReason(fmt.Sprintf("service %s stopped at %s, after the job ended: billed to its stop", svc, until.UTC().Format(time.RFC3339Nano))).
		SetIdempotencyKey(attemptKey(j) + "stop:" + svc)
	setPayer(b, payerOf(j))
	if err := b.OnConflictColumns(charge.FieldIdempotencyKey).DoNothing().Exec(sys); err != nil {
		return fmt.Errorf("billing the stop of service %s of job %s: %w", svc, j.ID, err)
	}
	metrics.Charged(string(charge.KindCompute), 1, int64(more))
	return nil
}
