package metering_test

import (
	"context"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/jobspec"
)

// BenchmarkMeterTick times one tick of the meter over 10,000 running jobs
// that each owe one minute: the steady state of a busy installation.
func BenchmarkMeterTick(b *testing.B) {
	for _, dialect := range dbtest.Dialects() {
		b.Run(dialect+"/jobs=10000", func(b *testing.B) {
			f := newFixture(b, dbtest.URL(b, dialect), tenant.BudgetPolicyFinish)
			seedRunning(b, f, 10_000)
			var elapsed time.Duration
			charges := 0
			b.ResetTimer()
			for range b.N {
				f.clock.Advance(time.Minute)
				start := time.Now()
				res, err := f.meter.Tick(context.Background())
				elapsed += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if res.Jobs != 10_000 || res.Charges != 10_000 {
					b.Fatalf("tick metered %d jobs with %d charges, want 10000 each", res.Jobs, res.Charges)
				}
				charges += res.Charges
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(elapsed.Milliseconds())/float64(b.N), "ms/tick")
			b.ReportMetric(float64(charges)/elapsed.Seconds(), "charges/s")
		})
	}
}

// seedRunning stores n running jobs of one service, started just now at a
// price of one token a minute.
func seedRunning(b *testing.B, f *world, n int) {
	b.Helper()
	started := f.clock.Now()
	rates := billing.Rates{CPUPerMinute: billing.Unit, Multiplier: 1}
	spec := jobspec.Job{Queue: "default", Services: []jobspec.Service{{Name: "main", Command: []string{"true"}, CPU: 1}}}
	for done := 0; done < n; done += 1000 {
		err := f.db.InTx(context.Background(), func(tx *database.Tx) error {
			jobs := make([]*ent.JobCreate, 0, 1000)
			for range min(1000, n-done) {
				jobs = append(jobs, tx.Ent.Job.Create().
					SetTenantID(f.t.ID).SetEnvironmentID(f.envID).SetQueueID(f.queue.ID).SetOwnerID(f.user).
					SetSpec(spec).SetStatus(job.StatusRunning).SetStartedAt(started).
					SetRates(rates).SetPricePerMinute(billing.Unit))
			}
			return tx.Ent.Job.CreateBulk(jobs...).Exec(f.sys)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
