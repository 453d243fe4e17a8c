package workers_test

import (
	"context"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/metering"
	"github.com/levers9/levers9/workers"
)

// The meter's tick plans the stop of a job whose payer cannot hold its
// next minute, and River's worker stops it "out of tokens" when due: here
// at once, the minute's boundary being closer than metering.StopLead.
func TestMeterPlansStopsOfUnpaidJobs(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		tn := fixture.New(t, url, fixture.TenantOptions{Slug: "unpaid", Policy: tenant.BudgetPolicyStop})
		sys := fixture.Sys()
		tn.Price(t, tn.DefaultQueue, billing.Rates{CPUPerMinute: billing.Unit, Multiplier: 1})
		tn.Grant(t, ledger.Payer{UserID: tn.Admin.ID}, 3*billing.Unit/2) // the first minute and half the next
		clock := fixture.NewClock(time.Now())
		js := fixture.Jobs(tn.DB, clock.Now)
		j := tn.Submit(t, js, nil, fixture.Service(1, 64))
		if err := js.MarkRunning(sys, j.ID, clock.Now().Add(-50*time.Second)); err != nil {
			t.Fatal(err)
		}
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
		defer func() {
			stopCtx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			if err := rc.Runner.Stop(stopCtx); err != nil {
				t.Errorf("stopping River: %v", err)
			}
		}()
		deadline := time.Now().Add(hang)
		for {
			got := tn.DB.Ent.Job.GetX(sys, j.ID)
			if got.Status == job.StatusCancelled {
				if got.StatusReason != jobs.OutOfTokens {
					t.Fatalf("job cancelled: %q", got.StatusReason)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("gave up waiting for the job to be stopped: %s", got.Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if bal, err := ledger.BalanceOf(sys, tn.DB.Ent, ledger.Payer{TenantID: tn.ID, UserID: tn.Admin.ID}); err != nil || bal < 0 {
			t.Fatalf("balance %v, %v", bal, err)
		}
	})
}
