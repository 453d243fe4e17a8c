package workers_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"

	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/metering"
	"github.com/levers9/levers9/workers"
)

// hang bounds every wait: it only tells a hang from a slow machine.
const hang = 90 * time.Second

// The meter workers run through their periodic schedule: the River client
// the server starts enqueues meter_runs and meter_storage by itself (at
// start, then every minute and every hour), and working them charges a
// running job its minute of compute and a bucket its hour of storage, at
// the meter's clock.
func TestMeterWorkersRunPeriodically(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		tn := fixture.New(t, url, fixture.TenantOptions{Slug: "meter", Policy: tenant.BudgetPolicyFinish})
		sys := fixture.Sys()
		tn.Price(t, tn.DefaultQueue, billing.Rates{CPUPerMinute: billing.Unit, Multiplier: 1})
		tn.Grant(t, ledger.Payer{UserID: tn.Admin.ID}, 100*billing.Unit)
		// The bucket is created now (the database's clock); the meter's
		// clock is two hours on, so at least its next whole hour is due.
		clock := fixture.NewClock(time.Now())
		st := tn.AddStorage(t, fixture.Storage{Name: "s3", Kind: storage.KindS3, Endpoint: "http://127.0.0.1:9",
			S3Bucket: "b", PricePerTBHour: 40 * billing.Unit})
		b := tn.AddBucket(t, fixture.Bucket{Name: "data", StorageID: st.ID})
		if err := tn.DB.Ent.Bucket.UpdateOneID(b.ID).SetSizeBytes(250_000_000_000).Exec(sys); err != nil { // 0.25 TB
			t.Fatal(err)
		}
		clock.Advance(2 * time.Hour)
		js := fixture.Jobs(tn.DB, clock.Now)
		j := tn.Submit(t, js, nil, fixture.Service(1, 64))
		// Running for a minute and a half: one whole minute is due.
		if err := js.MarkRunning(sys, j.ID, clock.Now().Add(-90*time.Second)); err != nil {
			t.Fatal(err)
		}
		// Nothing but the schedule enqueues the meters.
		rivertest.RequireNotInserted(context.Background(), t, driver(tn.DB), workers.MeterRunsArgs{}, nil)
		rivertest.RequireNotInserted(context.Background(), t, driver(tn.DB), workers.MeterStorageArgs{}, nil)

		meter := &metering.Meter{DB: tn.DB, Log: fixture.Log(), Now: clock.Now}
		rc, err := workers.NewClients(tn.DB, workers.Deps{Ent: tn.DB.Ent, Log: fixture.Log(), Meter: meter, Jobs: js})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if err := rc.Runner.Start(ctx); err != nil {
			t.Fatal(err)
		}
		stopped := false
		stop := func() {
			if stopped {
				return
			}
			stopped = true
			stopCtx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			if err := rc.Runner.Stop(stopCtx); err != nil {
				t.Errorf("stopping River: %v", err)
			}
		}
		defer stop()

		compute := charge.And(charge.KindEQ(charge.KindCompute), charge.JobID(j.ID))
		stored := charge.And(charge.KindEQ(charge.KindStorage), charge.BucketID(b.ID))
		deadline := time.Now().Add(hang)
		for !tn.DB.Ent.Charge.Query().Where(compute).ExistX(sys) || !tn.DB.Ent.Charge.Query().Where(stored).ExistX(sys) {
			if time.Now().After(deadline) {
				t.Fatal("gave up waiting for the periodic meters to charge")
			}
			time.Sleep(20 * time.Millisecond)
		}
		stop() // no further runs: what River holds now is what the schedule enqueued

		if cs := tn.DB.Ent.Charge.Query().Where(compute).AllX(sys); len(cs) != 1 || cs[0].Tokens != billing.Unit {
			t.Errorf("compute charges %+v; want one minute of 1 CPU at 1 token", cs)
		}
		for _, c := range tn.DB.Ent.Charge.Query().Where(stored).AllX(sys) {
			if c.Tokens != 10*billing.Unit {
				t.Errorf("an hour of 0.25 TB at 40 per TB-hour charged %v; want 10", c.Tokens)
			}
		}
		done := &rivertest.RequireInsertedOpts{Queue: river.QueueDefault, State: rivertype.JobStateCompleted}
		rivertest.RequireInserted(context.Background(), t, driver(tn.DB), workers.MeterRunsArgs{}, done)
		rivertest.RequireInserted(context.Background(), t, driver(tn.DB), workers.MeterStorageArgs{}, done)
	})
}

// driver is a River driver on db's *sql.DB for rivertest's queries: the
// SQLite driver there, the database/sql one on PostgreSQL.
func driver(db *database.DB) riverdriver.Driver[*sql.Tx] {
	if db.Dialect == dialect.SQLite {
		return riversqlite.New(db.SQL)
	}
	return riverdatabasesql.New(db.SQL)
}
