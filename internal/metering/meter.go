package metering

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/metrics"
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

// TickResult says what one tick did.
type TickResult struct {
	Jobs    int
	Charges int
	// Payers are those charged in this tick, and those with running jobs
	// no longer billed, for budget checks.
	Payers []ledger.Payer
	// Stops are the running jobs whose payer cannot hold their next
	// minute, each to be stopped ahead of it (Stop.At).
	Stops []Stop
}

// Tick charges every started job for its run time not yet charged, up to
// now; jobs that ended get their last partial minute and are closed.
func (m *Meter) Tick(ctx context.Context) (TickResult, error) {
	defer metrics.ObserveSince(metrics.MeterTick, time.Now())
	sys := viewer.SystemContext(ctx)
	now := m.Now()
	var res TickResult
	seen := map[ledger.Payer]bool{}
	after := ""
	for {
		// Keyset pages of open jobs: a tick over 10,000 jobs is 50
		// transactions, each charging 200 jobs.
		q := m.DB.Ent.Job.Query().
			Where(meteringOpen(), job.StartedAtNotNil(), job.IDGT(after)).
			Order(ent.Asc(job.FieldID)).Limit(batchSize)
		batch, err := q.All(sys)
		if err != nil {
			return res, fmt.Errorf("listing jobs to meter: %w", err)
		}
		if len(batch) == 0 {
			return res, m.addStopped(ctx, &res, seen)
		}
		after = batch[len(batch)-1].ID
		n, stops, err := m.chargeBatch(ctx, batch, now)
		if err != nil {
			return res, err
		}
		res.Stops = append(res.Stops, stops...)
		res.Jobs += len(batch)
		res.Charges += n
		for _, j := range batch {
			p := payerOf(j)
			if !seen[p] {
				seen[p] = true
				res.Payers = append(res.Payers, p)
			}
		}
	}
}

// addStopped adds to res the payers of running jobs whose billing the meter
// ended because their payer could not hold their next minute, so that the
// budget policy stops them.
func (m *Meter) addStopped(ctx context.Context, res *TickResult, seen map[ledger.Payer]bool) error {
	stopped, err := m.DB.Ent.Job.Query().
		Where(job.StatusEQ(job.StatusRunning), job.MeteringClosed(true)).
		All(viewer.SystemContext(ctx))
	if err != nil {
		return fmt.Errorf("listing running jobs no longer billed: %w", err)
	}
	for _, j := range stopped {
		p := payerOf(j)
		if !seen[p] {
			seen[p] = true
			res.Payers = append(res.Payers, p)
		}
	}
	return nil
}

func (m *Meter) chargeBatch(ctx context.Context, batch []*ent.Job, now time.Time) (int, []Stop, error) {
	ids := make([]string, len(batch))
	for i, j := range batch {
		ids[i] = j.ID
	}
	n := 0
	var stops []Stop
	err := m.DB.InTx(ctx, func(tx *database.Tx) error {
		var err error
		if n, stops, err = chargeRuns(ctx, tx.Ent, ids, now, nil, ""); err != nil {
			return err
		}
		if m.Fault != nil {
			return m.Fault(ids)
		}
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("metering jobs: %w", err)
	}
	return n, stops, nil
}

func payerOf(j *ent.Job) ledger.Payer {
	if j.ProjectID != "" {
		return ledger.Payer{TenantID: j.TenantID, ProjectID: j.ProjectID}
	}
	return ledger.Payer{TenantID: j.TenantID, UserID: j.OwnerID}
}

// ChargeRun writes the charges due for job id's run time up to now
// through c (inside the caller's transaction) and returns how many it
// wrote.
func ChargeRun(ctx context.Context, c *ent.Client, id string, now time.Time) (int, error) {
	n, _, err := chargeRuns(ctx, c, []string{id}, now, nil, "")
	return n, err
}

// CloseAttempt charges job j's current run as if it ended at alive, the
// last moment its lost node proved it alive, and resets the job's metering
// for its next attempt, which starts counting minutes from zero under keys
// of its own.
func CloseAttempt(ctx context.Context, c *ent.Client, j *ent.Job, alive time.Time) error {
	if err := Lost(ctx, c, j, alive); err != nil {
		return err
	}
	err := c.Job.UpdateOneID(j.ID).SetMeteredMinutes(0).SetMeteringClosed(false).Exec(viewer.SystemContext(ctx))
	if err != nil {
		return fmt.Errorf("resetting metering of job %s: %w", j.ID, err)
	}
	return nil
}

// Lost charges job j's run, whose node was lost, up to alive, the last
// moment the node proved it alive, and closes its metering: ending the job
// afterwards (at any time) charges nothing more.
func Lost(ctx context.Context, c *ent.Client, j *ent.Job, alive time.Time) error {
	alive = aliveSince(j, alive)
	if _, _, err := chargeRuns(ctx, c, []string{j.ID}, alive, &alive, nodeLost(alive)); err != nil {
		return err
	}
	return refundAfter(ctx, c, j, alive)
}

// refundAfter credits what job j's current run was charged beyond a run
// that ended at alive: the meter charges each minute as it passes, and the
// TTL and grace can outlast a minute that began after the last sign of
// life.
func refundAfter(ctx context.Context, c *ent.Client, j *ent.Job, alive time.Time) error {
	if j.StartedAt == nil {
		return nil
	}
	sys := viewer.SystemContext(ctx)
	cs, err := attemptCharges(ctx, c, j)
	if err != nil {
		return err
	}
	var charged billing.Tokens
	for _, ch := range cs {
		charged += ch.Tokens
	}
	over := charged - billing.RunCost(j.PricePerMinute, alive.Sub(*j.StartedAt))
	if over <= 0 {
		return nil
	}
	b := c.Charge.Create().
		SetTenantID(j.TenantID).SetJobID(j.ID).SetUserID(j.OwnerID).
		SetKind(charge.KindAdjustment).SetTokens(-over).SetRates(j.Rates).
		SetPeriodStart(alive).SetPeriodEnd(alive).
		SetReason(nodeLost(alive) + "; refunds the run time charged after it").
		SetIdempotencyKey(fmt.Sprintf("lost:%s:%d", j.ID, j.Attempt))
	setPayer(b, payerOf(j))
	if err := b.OnConflictColumns(charge.FieldIdempotencyKey).DoNothing().Exec(sys); err != nil {
		return fmt.Errorf("refunding job %s: %w", j.ID, err)
	}
	metrics.Charged(string(charge.KindAdjustment), 1, -int64(over))
	return nil
}

// attemptKey is the start of the idempotency keys of the compute charges of
// job j's current attempt.
func attemptKey(j *ent.Job) string { return fmt.Sprintf("compute:%s:%d:", j.ID, j.Attempt) }

// attemptCharges are the compute charges of job j's current attempt.
func attemptCharges(ctx context.Context, c *ent.Client, j *ent.Job) ([]*ent.Charge, error) {
	cs, err := c.Charge.Query().
		Where(charge.JobID(j.ID), charge.KindEQ(charge.KindCompute), charge.IdempotencyKeyHasPrefix(attemptKey(j))).
		All(viewer.SystemContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("loading charges of job %s: %w", j.ID, err)
	}
	return cs, nil
}

// aliveSince is alive, or when job j started if that is later: the start
// was reported by the node, so it proves the run alive then.
func aliveSince(j *ent.Job, alive time.Time) time.Time {
	if j.StartedAt != nil && alive.Before(*j.StartedAt) {
		return *j.StartedAt
	}
	return alive
}

// nodeLost is the reason on the last charge of a run whose node was lost:
// the time after which nothing was charged.
func nodeLost(alive time.Time) string {
	return "node lost: billed to its last sign of life at " + alive.UTC().Format(time.RFC3339)
}

// chargeRuns charges jobs ids up to now (as if they ended at end, when
// given, with reason on the last charge). It reads their progress from the
// database, so stale callers are harmless, inserts with the unique
// idempotency key, so two meters write each minute once, and only ever
// moves progress forward. Under the `stop` policy it ends a job's billing
// at the first minute its payer cannot hold (see budget).
func chargeRuns(ctx context.Context, c *ent.Client, ids []string, now time.Time, end *time.Time, reason string) (int, []Stop, error) {
	sys := viewer.SystemContext(ctx)
	jobs, err := c.Job.Query().
		Where(job.IDIn(ids...), meteringOpen(), job.StartedAtNotNil()).
		All(sys)
	if err != nil {
		return 0, nil, fmt.Errorf("loading jobs to meter: %w", err)
	}
	// Oldest minute first, so a payer's earlier minutes are held first.
	sort.Slice(jobs, func(a, b int) bool {
		ta, tb := minuteStart(jobs[a]), minuteStart(jobs[b])
		if !ta.Equal(tb) {
			return ta.Before(tb)
		}
		return jobs[a].ID < jobs[b].ID
	})
	held, err := budgetsOf(ctx, c, jobs)
	if err != nil {
		return 0, nil, err
	}
	type progress struct {
		metered int64
		closed  bool
	}
	var builders []*ent.ChargeCreate
	var tokens billing.Tokens // in builders, for metrics
	moved := map[progress][]string{}
	var stops []Stop
	for _, j := range jobs {
		ended := j.FinishedAt
		if end != nil {
			ended = end
		}
		due, closed := billing.Due(*j.StartedAt, ended, now, j.MeteredMinutes, j.PricePerMinute)
		last := ""
		if end != nil {
			last = reason
		}
		if b := held.of(j); b != nil {
			var stop *time.Time
			if due, closed, stop = b.hold(j, due, closed); stop != nil {
				last = fmt.Sprintf("out of tokens: billed to %s, the next minute could not be paid for", stop.UTC().Format(time.RFC3339))
			}
			if !closed && !b.next(j) {
				next := j.StartedAt.Add(time.Duration(j.MeteredMinutes+int64(len(due))+1) * time.Minute)
				stops = append(stops, Stop{JobID: j.ID, Attempt: j.Attempt, At: maxTime(next.Add(-StopLead), now)})
			}
		}
		if len(due) == 0 && !closed {
			continue
		}
		payer := payerOf(j)
		for i, d := range due {
			b := c.Charge.Create().
				SetTenantID(j.TenantID).
				SetJobID(j.ID).
				SetUserID(j.OwnerID).
				SetKind(charge.KindCompute).
				SetTokens(d.Tokens).
				SetRates(j.Rates).
				SetPeriodStart(d.Start).
				SetPeriodEnd(d.End).
				SetIdempotencyKey(attemptKey(j) + strconv.FormatInt(d.Index, 10))
			if closed && i == len(due)-1 && last != "" {
				b.SetReason(last)
			}
			setPayer(b, payer)
			builders = append(builders, b)
			tokens += d.Tokens
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
			return 0, nil, fmt.Errorf("writing charges: %w", err)
		}
	}
	metrics.Charged(string(charge.KindCompute), len(builders), int64(tokens))
	// One statement per distinct progress: in steady state, a few per batch.
	for p, ids := range moved {
		upd := c.Job.Update().Where(job.IDIn(ids...), job.MeteredMinutesLTE(p.metered)).SetMeteredMinutes(p.metered)
		if p.closed {
			upd.SetMeteringClosed(true)
		}
		if err := upd.Exec(sys); err != nil {
			return 0, nil, fmt.Errorf("recording metering progress: %w", err)
		}
	}
	return len(builders), stops, nil
}

// minuteStart is when job j's first minute not yet charged began.
func minuteStart(j *ent.Job) time.Time {
	return j.StartedAt.Add(time.Duration(j.MeteredMinutes) * time.Minute)
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
