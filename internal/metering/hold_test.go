package metering_test

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/jobspec"
)

// The case: 6 tokens, a job at 3.75 a minute, policy `stop`. The
// second minute cannot be paid for, so the job is stopped at the end of the
// first, billed 3.75, and the balance stays at 2.25 (it went to -3.75).
func TestStopHoldsNextMinute(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		f := newFixture(t, url, tenant.BudgetPolicyStop)
		price := 3*billing.Unit + 3*billing.Unit/4
		f.setPrices(t, billing.Rates{CPUPerMinute: price, Multiplier: 1})
		f.grant(t, 6*billing.Unit)
		j := f.submit(t, 1, 0, 0)
		start := f.clock.Now()
		if err := f.jobs.MarkRunning(f.sys, j.ID, start); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(90 * time.Second) // the meter runs late into minute 2
		stopped := f.tick(t)
		got, err := f.db.Ent.Job.Get(f.sys, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(stopped) != 1 || got.Status != job.StatusCancelled || got.StatusReason != jobs.OutOfTokens {
			t.Fatalf("stopped %v, job %s (%s)", stopped, got.Status, got.StatusReason)
		}
		for range 3 {
			f.clock.Advance(time.Minute)
			f.tick(t)
		}
		if b := f.balance(t); b != 6*billing.Unit-price {
			t.Fatalf("balance = %v, want 2.25", b)
		}
		var compute []string
		for _, c := range f.charges(t, j.ID) {
			if c.Kind != charge.KindCompute {
				continue
			}
			compute = append(compute, c.PeriodEnd.Sub(start).String())
			if !strings.HasPrefix(c.Reason, "out of tokens") {
				t.Errorf("last charge's reason is %q", c.Reason)
			}
		}
		if fmt.Sprint(compute) != "[1m0s]" {
			t.Fatalf("compute charges end at %v after the start; want one, at 1m0s", compute)
		}
	})
}

// Two jobs of one payer: each holds the minute it is in, so the second
// cannot start a minute the first one's tokens are held for.
func TestStopHoldsAcrossJobs(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		f := newFixture(t, url, tenant.BudgetPolicyStop)
		f.setPrices(t, billing.Rates{CPUPerMinute: billing.Unit, Multiplier: 1})
		f.grant(t, 5*billing.Unit)
		a, b := f.submit(t, 2, 0, 0), f.submit(t, 2, 0, 0) // 2 a minute each
		if err := f.jobs.MarkRunning(f.sys, a.ID, f.clock.Now()); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(30 * time.Second)
		if err := f.jobs.MarkRunning(f.sys, b.ID, f.clock.Now()); err != nil {
			t.Fatal(err)
		}
		// 5 tokens: a's first minute (2) and b's (2) are held; at 1:00 a
		// needs 2 more but only 1 is spare, so it stops; b finishes its
		// minute and stops at 1:30 with 1 token left.
		f.clock.Advance(2 * time.Minute)
		f.tick(t)
		f.clock.Advance(time.Minute)
		f.tick(t)
		if bal := f.balance(t); bal != billing.Unit {
			t.Fatalf("balance = %v, want 1", bal)
		}
		for _, id := range []string{a.ID, b.ID} {
			got, err := f.db.Ent.Job.Get(f.sys, id)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != job.StatusCancelled || got.StatusReason != jobs.OutOfTokens {
				t.Errorf("job %s: %s (%s)", id, got.Status, got.StatusReason)
			}
		}
	})
}

// A job whose first minute its payer cannot hold (the other job holds the
// tokens: some were taken back after both were admitted) is billed nothing
// and stopped at its start, not a tick later; a job that ends by itself
// after a boundary it could not pay past, before the meter ran, is billed
// to that boundary.
func TestStopAtStartAndAtEnd(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		f := newFixture(t, url, tenant.BudgetPolicyStop)
		f.setPrices(t, billing.Rates{CPUPerMinute: billing.Unit, Multiplier: 1})
		f.grant(t, 4*billing.Unit)
		a, b := f.submit(t, 2, 0, 0), f.submit(t, 2, 0, 0) // 2 a minute each; 4 admits both
		f.grant(t, -billing.Unit)                          // 3 covers one
		start := f.clock.Now()
		for _, j := range []string{a.ID, b.ID} {
			if err := f.jobs.MarkRunning(f.sys, j, start); err != nil {
				t.Fatal(err)
			}
		}
		if got, _ := f.db.Ent.Job.Get(f.sys, b.ID); got.Status != job.StatusCancelled || got.StatusReason != jobs.OutOfTokens {
			t.Fatalf("the job that could not start its first minute is %s (%s)", got.Status, got.StatusReason)
		}
		f.clock.Advance(10 * time.Second)
		if stopped := f.tick(t); len(stopped) != 0 {
			t.Fatalf("the tick stopped %v, want none", stopped)
		}
		if cs := f.charges(t, b.ID); len(cs) != 0 {
			t.Fatalf("the job that could not start its first minute has %d charges", len(cs))
		}
		// a's second minute cannot be held (1 left); it ends at 1:40
		// before any tick: billed to 1:00.
		end := start.Add(100 * time.Second)
		if err := f.jobs.MarkEnded(f.sys, a.ID, job.StatusComplete, "exit 0", end); err != nil {
			t.Fatal(err)
		}
		if bal := f.balance(t); bal != billing.Unit {
			t.Fatalf("balance = %v, want 1", bal)
		}
	})
}

// Property: under `stop`, whatever the grants, prices, start fees, number
// of jobs, how long they wait pending (their node down), their start and
// end times and when the meter runs, a payer's balance never goes below
// zero: a submission is admitted only on top of what pending and running
// jobs are committed to, and a start pays its fee only with its first
// minute held (no partial minute either: a job is stopped at the boundary
// of the last minute its payer could hold). And no job runs on unbilled:
// once the tokens are used up every job has been stopped, each billed up
// to a minute boundary.
func TestStopNeverOverspends(t *testing.T) {
	t.Parallel()
	// A PostgreSQL scenario costs a database of its own: fewer there.
	scenarios := map[string]uint64{"sqlite": 30, "postgres": 8}
	for _, d := range dbtest.Dialects() {
		t.Run(d, func(t *testing.T) {
			for seed := range cmp.Or(scenarios[d], 8) {
				t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { checkStopScenario(t, dbtest.URL(t, d), seed) })
			}
		})
	}
}

func checkStopScenario(t *testing.T, url string, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 14))
	f := newFixture(t, url, tenant.BudgetPolicyStop)
	// Prices from 0.1 to 5 tokens a CPU-minute; half the scenarios have a
	// start fee.
	rates := billing.Rates{CPUPerMinute: billing.Unit/10 + billing.Tokens(rng.Int64N(int64(5*billing.Unit))), Multiplier: 1}
	if rng.IntN(2) == 0 {
		rates.StartFee = billing.Tokens(rng.Int64N(int64(3 * billing.Unit)))
	}
	f.setPrices(t, rates)
	granted := billing.Unit + billing.Tokens(rng.Int64N(int64(40*billing.Unit)))
	f.grant(t, granted)
	n := 1 + rng.IntN(5)
	type run struct {
		id    string
		start time.Time
		ended bool
	}
	var runs []*run
	var pending []string // admitted, waiting for their node
	check := func(when string) {
		t.Helper()
		if bal := f.balance(t); bal < 0 {
			t.Fatalf("seed %d, %s: balance %v after %v granted (price %v/CPU-minute, start fee %v, %d jobs)",
				seed, when, bal, granted, rates.CPUPerMinute, rates.StartFee, n)
		}
	}
	for step := 0; step < 40; step++ {
		// Milliseconds: both databases keep them exactly.
		f.clock.Advance(time.Second + time.Duration(rng.Int64N(150_000))*time.Millisecond)
		now := f.clock.Now()
		switch x := rng.IntN(10); {
		case x < 3 && len(runs)+len(pending) < n: // a job is submitted; it waits for its node
			j, err := f.jobs.Submit(f.admin, jobspec.Job{Queue: "default", Services: []jobspec.Service{
				{Name: "main", Command: []string{"true"}, CPU: float64(1+rng.IntN(4)) / 2},
			}})
			var fe *fault.Error
			if errors.As(err, &fe) && fe.Code == fault.InsufficientTokens {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			pending = append(pending, j.ID)
		case x < 5 && len(pending) > 0: // the node is back: every pending job starts
			for _, id := range pending {
				if err := f.jobs.MarkRunning(f.sys, id, now); err != nil {
					t.Fatal(err)
				}
				runs = append(runs, &run{id: id, start: now})
				check("after a start")
			}
			pending = nil
		case x < 6 && len(runs) > 0: // a job ends by itself
			r := runs[rng.IntN(len(runs))]
			if err := f.jobs.MarkEnded(f.sys, r.id, job.StatusComplete, "exit 0", now); err != nil {
				t.Fatal(err)
			}
			r.ended = true
			check("after a job ended")
		default:
			f.tick(t)
			check("after a tick")
		}
	}
	// Enough time for any grant to run out: every job not ended by itself
	// is stopped, billed to a minute boundary.
	f.clock.Advance(10 * time.Hour)
	f.tick(t)
	f.tick(t)
	check("at the end")
	stopped := 0
	for _, r := range runs {
		got, err := f.db.Ent.Job.Get(f.sys, r.id)
		if err != nil {
			t.Fatal(err)
		}
		if r.ended && got.StatusReason == "exit 0" {
			continue
		}
		if got.Status != job.StatusCancelled || got.StatusReason != jobs.OutOfTokens {
			t.Fatalf("seed %d: job %s is %s (%s) after its tokens ran out", seed, r.id, got.Status, got.StatusReason)
		}
		stopped++
		for _, c := range f.charges(t, r.id) {
			if c.Kind == charge.KindCompute && c.PeriodEnd.Sub(r.start)%time.Minute != 0 {
				t.Fatalf("seed %d: job %s stopped out of tokens was billed to %v after its start", seed, r.id, c.PeriodEnd.Sub(r.start))
			}
		}
	}
	t.Logf("seed %d: %d jobs ran, %d stopped out of tokens, balance %v of %v granted", seed, len(runs), stopped, f.balance(t), granted)
}
