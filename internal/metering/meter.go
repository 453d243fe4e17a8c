package metering

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/viewer"
)

// batchSize is how many jobs one transaction of a tick charges.
const batchSize = 200

// Meter charges run time and storage.
type Meter struct {
	DB  *database.DB
	Log *slog.Logger
	Now func() time.Time
	// Fault, when set, runs before each batch commits; an error aborts the
	// batch as a crash would. It exists for fault-injection tests.
	Fault func(jobIDs []string) error
}

// Payer is a payer of one tenant, as the meter saw it.
type Payer struct {
	TenantID string
	ledger.Payer
}

// TickResult says what one tick did.
type TickResult struct {
	Jobs    int
	Charges int
	// Payers are those charged in this tick, for budget checks.
	Payers []Payer
}

// Tick charges every started job for its run time not yet charged, up to
// now; jobs that ended get their last partial minute and are closed.
func (m *Meter) Tick(ctx context.Context) (TickResult, error) {
	sys := viewer.SystemContext(ctx)
	now := m.Now()
	var res TickResult
	seen := map[Payer]bool{}
	after := ""
	for {
		// Keyset pages of open jobs: a tick over 10,000 jobs is 50
		// transactions, each charging 200 jobs.
		q := m.DB.Ent.Job.Query().
			Where(job.MeteringClosed(false), job.StartedAtNotNil(), job.IDGT(after)).
			Order(ent.Asc(job.FieldID)).Limit(batchSize)
		batch, err := q.All(sys)
		if err != nil {
			return res, fmt.Errorf("listing jobs to meter: %w", err)
		}
		if len(batch) == 0 {
			return res, nil
		}
		after = batch[len(batch)-1].ID
		n, err := m.chargeBatch(ctx, batch, now)
		if err != nil {
			return res, err
		}
		res.Jobs += len(batch)
		res.Charges += n
		for _, j := range batch {
			p := Payer{TenantID: j.TenantID, Payer: payerOf(j)}
			if !seen[p] {
				seen[p] = true
				res.Payers = append(res.Payers, p)
			}
		}
	}
}

func (m *Meter) chargeBatch(ctx context.Context, batch []*ent.Job, now time.Time) (int, error) {
	ids := make([]string, len(batch))
	for i, j := range batch {
		ids[i] = j.ID
	}
	n := 0
	err := m.DB.InTx(ctx, func(tx *database.Tx) error {
		var err error
		if n, err = chargeRuns(ctx, tx.Ent, ids, now, nil); err != nil {
			return err
		}
		if m.Fault != nil {
			return m.Fault(ids)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("metering jobs: %w", err)
	}
	return n, nil
}

func payerOf(j *ent.Job) ledger.Payer {
	if j.ProjectID != "" {
		return ledger.Payer{ProjectID: j.ProjectID}
	}
	return ledger.Payer{UserID: j.OwnerID}
}

// ChargeRun writes the charges due for job j's run time up to now through
// c (inside the caller's transaction) and returns how many it wrote.
func ChargeRun(ctx context.Context, c *ent.Client, j *ent.Job, now time.Time) (int, error) {
	return chargeRuns(ctx, c, []string{j.ID}, now, nil)
}

// CloseAttempt charges job j's current run as if it ended at at (its node
// was lost) and resets the job's metering for its next attempt, which
// starts counting minutes from zero under keys of its own.
func CloseAttempt(ctx context.Context, c *ent.Client, j *ent.Job, at time.Time) error {
	if _, err := chargeRuns(ctx, c, []string{j.ID}, at, &at); err != nil {
		return err
	}
	err := c.Job.UpdateOneID(j.ID).SetMeteredMinutes(0).SetMeteringClosed(false).Exec(viewer.SystemContext(ctx))
	if err != nil {
		return fmt.Errorf("resetting metering of job %s: %w", j.ID, err)
	}
	return nil
}

// chargeRuns charges jobs ids up to now. It reads their progress from the
// database, so stale callers are harmless, inserts with the unique
// idempotency key, so two meters write each minute once, and only ever
// moves progress forward.
func chargeRuns(ctx context.Context, c *ent.Client, ids []string, now time.Time, end *time.Time) (int, error) {
	sys := viewer.SystemContext(ctx)
	jobs, err := c.Job.Query().
		Where(job.IDIn(ids...), job.MeteringClosed(false), job.StartedAtNotNil()).
		All(sys)
	if err != nil {
		return 0, fmt.Errorf("loading jobs to meter: %w", err)
	}
	type progress struct {
		metered int64
		closed  bool
	}
	var builders []*ent.ChargeCreate
	moved := map[progress][]string{}
	for _, j := range jobs {
		ended := j.FinishedAt
		if end != nil {
			ended = end
		}
		due, closed := billing.Due(*j.StartedAt, ended, now, j.MeteredMinutes, j.PricePerMinute)
		if len(due) == 0 && !closed {
			continue
		}
		payer := payerOf(j)
		for _, d := range due {
			b := c.Charge.Create().
				SetTenantID(j.TenantID).
				SetJobID(j.ID).
				SetUserID(j.OwnerID).
				SetKind(charge.KindCompute).
				SetTokens(d.Tokens).
				SetRates(j.Rates).
				SetPeriodStart(d.Start).
				SetPeriodEnd(d.End).
				SetIdempotencyKey(fmt.Sprintf("compute:%s:%d:%d", j.ID, j.Attempt, d.Index))
			setPayer(b, payer)
			builders = append(builders, b)
		}
		p := progress{j.MeteredMinutes + int64(len(due)), closed}
		moved[p] = append(moved[p], j.ID)
	}
	for start := 0; start < len(builders); start += insertChunk {
		chunk := builders[start:min(start+insertChunk, len(builders))]
		err := c.Charge.CreateBulk(chunk...).
			OnConflictColumns(charge.FieldIdempotencyKey).DoNothing().
			Exec(sys)
		if err != nil {
			return 0, fmt.Errorf("writing charges: %w", err)
		}
	}
	// One statement per distinct progress: in steady state, a few per batch.
	for p, ids := range moved {
		upd := c.Job.Update().Where(job.IDIn(ids...), job.MeteredMinutesLTE(p.metered)).SetMeteredMinutes(p.metered)
		if p.closed {
			upd.SetMeteringClosed(true)
		}
		if err := upd.Exec(sys); err != nil {
			return 0, fmt.Errorf("recording metering progress: %w", err)
		}
	}
	return len(builders), nil
}

// insertChunk keeps one INSERT's parameters well under SQLite's limit.
const insertChunk = 500

func setPayer(b *ent.ChargeCreate, p ledger.Payer) {
	if p.ProjectID != "" {
		b.SetPayerKind(charge.PayerKindProject).SetProjectID(p.ProjectID)
		return
	}
	b.SetPayerKind(charge.PayerKindUser)
}
