package workers_test

import (
	"context"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/workers"
)

// The idle sweep runs through its periodic schedule, at the jobs
// service's clock: an interactive job warned 5 minutes ago and idle past
// its queue's timeout is stopped; a batch job next to it runs on. The
// clock is hours ahead of the wall clock, so a sweep at time.Now would
// find nothing idle.
func TestStopIdleRunsPeriodically(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		tn := fixture.New(t, url, fixture.TenantOptions{Slug: "idle", Policy: tenant.BudgetPolicyFinish})
		sys := fixture.Sys()
		if err := tn.DB.Ent.Queue.UpdateOneID(tn.DefaultQueue).SetIdleTimeoutSeconds(30 * 60).Exec(sys); err != nil {
			t.Fatal(err)
		}
		clock := fixture.NewClock(time.Now().Add(10 * time.Hour))
		js := fixture.Jobs(tn.DB, clock.Now)
		start := func(interactive bool) string {
			j := tn.SubmitSpec(t, js, nil, jobspec.Job{Queue: tenancy.DefaultQueue, Interactive: interactive,
				Services: []jobspec.Service{fixture.Service(1, 64)}})
			if err := js.MarkRunning(sys, j.ID, clock.Now().Add(-35*time.Minute)); err != nil {
				t.Fatal(err)
			}
			return j.ID
		}
		inter, batch := start(true), start(false)
		if warned, _, err := js.IdleSweep(context.Background(), clock.Now().Add(-5*time.Minute)); err != nil || warned != 1 {
			t.Fatalf("warning sweep: warned %d, %v; want 1", warned, err)
		}

		rc, err := workers.NewClients(tn.DB, workers.Deps{Ent: tn.DB.Ent, Log: fixture.Log(), Jobs: js})
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
		for tn.DB.Ent.Job.GetX(sys, inter).Status == job.StatusRunning {
			if time.Now().After(deadline) {
				t.Fatal("gave up waiting for the periodic idle sweep to stop the job")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if j := tn.DB.Ent.Job.GetX(sys, inter); j.Status != job.StatusCancelled || j.StatusReason != "idle for 35m" {
			t.Fatalf("interactive job %s %q; want CANCELLED, idle for 35m", j.Status, j.StatusReason)
		}
		if j := tn.DB.Ent.Job.GetX(sys, batch); j.Status != job.StatusRunning {
			t.Fatalf("batch job %s %q; want RUNNING", j.Status, j.StatusReason)
		}
	})
}
