package metering_test

import (
	"context"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/metering"
)

// A job whose payer cannot hold its next minute is planned to stop
// StopLead before that minute, at the tick in the minute before; stopped
// then, it is billed to the second and the balance stays above zero. A
// grant that comes before the planned stop lets it run on.
func TestStopAheadOfAnUnpaidMinute(t *testing.T) {
	t.Parallel()
	for _, granted := range []bool{false, true} {
		t.Run(map[bool]string{false: "stopped", true: "granted meanwhile"}[granted], func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, url string) {
				f := newFixture(t, url, tenant.BudgetPolicyStop)
				f.setPrices(t, billing.Rates{CPUPerMinute: billing.Unit, Multiplier: 1})
				f.grant(t, 5*billing.Unit)
				j := f.submit(t, 2, 0, 0) // 2 a minute: 5 pays two minutes and a half
				start := f.clock.Now()
				if err := f.jobs.MarkRunning(f.sys, j.ID, start); err != nil {
					t.Fatal(err)
				}
				tick := func() metering.TickResult {
					t.Helper()
					res, err := f.meter.Tick(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					return res
				}
				f.clock.Advance(10 * time.Second)
				if res := tick(); len(res.Stops) != 0 {
					t.Fatalf("in the first minute, the second paid: stops %+v", res.Stops)
				}
				f.clock.Advance(60 * time.Second)
				res := tick()
				want := start.Add(2*time.Minute - metering.StopLead)
				if len(res.Stops) != 1 || res.Stops[0].JobID != j.ID || res.Stops[0].Attempt != 1 || !res.Stops[0].At.Equal(want) {
					t.Fatalf("in the second minute, the third unpaid: stops %+v, want %s at %v", res.Stops, j.ID, want)
				}
				if granted {
					f.grant(t, 10*billing.Unit)
				}
				f.clock.Advance(want.Sub(f.clock.Now()))
				stopped, err := f.jobs.StopUnpaid(context.Background(), j.ID, 1)
				if err != nil {
					t.Fatal(err)
				}
				got, _ := f.db.Ent.Job.Get(f.sys, j.ID)
				if granted {
					if stopped || got.Status != job.StatusRunning {
						t.Fatalf("after a grant: stopped %v, %s", stopped, got.Status)
					}
					return
				}
				if !stopped || got.Status != job.StatusCancelled || got.StatusReason != jobs.OutOfTokens {
					t.Fatalf("stopped %v, %s (%s)", stopped, got.Status, got.StatusReason)
				}
				billed := billing.RunCost(2*billing.Unit, want.Sub(start))
				if bal := f.balance(t); bal != 5*billing.Unit-billed || bal < 0 {
					t.Fatalf("balance %v, want %v: billed to the stop", bal, 5*billing.Unit-billed)
				}
			})
		})
	}
}
