package jobs_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/metering"
	"github.com/levers9/levers9/internal/tenancy"
)

// Property: whatever a two-service job's timeline (when each service
// starts, whether both exit, one fails or the job is cancelled, how long
// the node takes to stop what still runs, when the meter ticks, reports
// replayed), it is billed exactly the run from its first service's start
// to its last service's stop, to the second: no second unbilled, none
// billed twice.
func TestBillingTimelines(t *testing.T) {
	t.Parallel()
	scenarios := map[string]uint64{"sqlite": 24, "postgres": 6}
	for _, d := range dbtest.Dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			for seed := range cmp.Or(scenarios[d], 6) {
				t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { checkTimeline(t, dbtest.URL(t, d), seed) })
			}
		})
	}
}

func checkTimeline(t *testing.T, url string, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 42))
	tn := fixture.New(t, url, fixture.TenantOptions{Policy: tenant.BudgetPolicyFinish})
	perCPU := billing.Unit/7 + billing.Tokens(rng.Int64N(int64(3*billing.Unit)))
	tn.Price(t, tn.DefaultQueue, billing.Rates{CPUPerMinute: perCPU, Multiplier: 1})
	tn.Grant(t, ledger.Payer{UserID: tn.Admin.ID}, 1000*billing.Unit)
	nodeID := tn.AddNode(t, fixture.Node{Name: "n1", Queues: []string{tn.DefaultQueue}}).ID
	start := time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)
	now := start
	clock := func() time.Time { return now }
	js := fixture.Jobs(tn.DB, clock)
	meter := &metering.Meter{DB: tn.DB, Log: fixture.Log(), Now: clock}
	a, b := fixture.Service(1, 64), fixture.Service(1, 64)
	a.Name, b.Name = "a", "b"
	j := tn.SubmitSpec(t, js, nil, jobspec.Job{Queue: tenancy.DefaultQueue, Services: []jobspec.Service{a, b}})
	if err := tn.DB.Ent.Service.Update().Where(service.JobID(j.ID)).SetNodeID(nodeID).SetDispatchedAt(start).Exec(fixture.Sys()); err != nil {
		t.Fatal(err)
	}
	ref := func(svc string) jobs.ServiceRef {
		return jobs.ServiceRef{JobID: j.ID, Service: svc, NodeID: nodeID, Attempt: 1}
	}
	ctx := context.Background()
	// Milliseconds: both databases keep them exactly.
	after := func(t0 time.Time, most time.Duration) time.Time {
		return t0.Add(time.Duration(rng.Int64N(int64(most/time.Millisecond))+1) * time.Millisecond)
	}
	// advance moves the clock to at, the meter ticking on the way at
	// random moments.
	advance := func(at time.Time) {
		t.Helper()
		for {
			next := after(now, 90*time.Second)
			if !next.Before(at) {
				break
			}
			now = next
			if _, err := meter.Tick(ctx); err != nil {
				t.Fatal(err)
			}
		}
		now = at
	}
	run := func(svc string, at time.Time) {
		t.Helper()
		advance(at)
		if err := js.ServiceRunning(ctx, ref(svc), nil, at); err != nil {
			t.Fatal(err)
		}
	}
	stop := func(svc string, at time.Time, failed bool) {
		t.Helper()
		advance(at)
		code := 0
		end := jobs.ServiceEnd{ExitCode: &code}
		if failed {
			code = 137
			end = jobs.ServiceEnd{ExitCode: &code, Failed: true, Reason: "killed"}
		}
		for range 1 + rng.IntN(2) { // sometimes replayed
			if _, err := js.ServiceEnded(ctx, ref(svc), end, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	first := start.Add(time.Second)
	second := after(first, 3*time.Minute)
	run("a", first)
	var last time.Time
	switch kind := rng.IntN(3); kind {
	case 0: // a may exit before b starts; both exit 0
		aEnd := after(first, 4*time.Minute)
		bEnd := after(second, 4*time.Minute)
		if aEnd.Before(second) {
			stop("a", aEnd, false)
			run("b", second)
		} else {
			run("b", second)
			if aEnd.Before(bEnd) {
				stop("a", aEnd, false)
			}
		}
		stop("b", bEnd, false)
		if !aEnd.Before(bEnd) {
			stop("a", aEnd, false)
		}
		last = maxTime(aEnd, bEnd)
	case 1: // cancelled while both run; the node stops them later
		run("b", second)
		advance(after(second, 4*time.Minute))
		if _, err := js.Cancel(tn.AsAdmin(), j.ID); err != nil {
			t.Fatal(err)
		}
		aEnd, bEnd := after(now, 20*time.Second), after(now, 20*time.Second)
		stop("a", minTime(aEnd, bEnd), true)
		stop("b", maxTime(aEnd, bEnd), true)
		last = maxTime(aEnd, bEnd)
	case 2: // a fails while b runs; the node stops b later
		run("b", second)
		aEnd := after(second, 4*time.Minute)
		stop("a", aEnd, true)
		bEnd := after(aEnd, 20*time.Second)
		stop("b", bEnd, true)
		last = bEnd
	}
	advance(last.Add(3 * time.Minute))
	if _, err := meter.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	cs := tn.DB.Ent.Charge.Query().Where(charge.JobID(j.ID), charge.KindEQ(charge.KindCompute)).AllX(fixture.Sys())
	var sum billing.Tokens
	for _, c := range cs {
		sum += c.Tokens
	}
	got := tn.DB.Ent.Job.GetX(fixture.Sys(), j.ID)
	if want := billing.RunCost(got.PricePerMinute, last.Sub(first)); sum != want {
		t.Fatalf("seed %d: %s (%s), ran %v from its first service's start to its last stop: charged %v in %d charges, want %v",
			seed, got.Status, got.StatusReason, last.Sub(first), sum, len(cs), want)
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
