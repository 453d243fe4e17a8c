package metering_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/ledger"
)

// tick runs the meter and the budget policy, as the meter_runs worker does.
func (f *world) tick(t *testing.T) []string {
	t.Helper()
	res, err := f.meter.Tick(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	stopped, err := f.jobs.EnforceBudgets(context.Background(), res.Payers)
	if err != nil {
		t.Fatal(err)
	}
	return stopped
}

func (f *world) balance(t *testing.T) billing.Tokens {
	t.Helper()
	b, err := (&ledger.Service{DB: f.db}).Balance(f.admin, ledger.Payer{UserID: f.user})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// With a 1 CPU job at 1 token a minute and a start fee of 2, a budget of 10
// lasts 8 minutes. Under `stop` the job is cancelled at the minute its
// balance cannot cover; under `finish` it runs on into the red. Either way new
// submissions are refused.
func TestBudgetPolicies(t *testing.T) {
	t.Parallel()
	for _, policy := range []tenant.BudgetPolicy{tenant.BudgetPolicyStop, tenant.BudgetPolicyFinish} {
		t.Run(string(policy), func(t *testing.T) {
			t.Parallel()
			dbtest.Each(t, func(t *testing.T, url string) {
				f := newFixture(t, url, policy)
				f.setPrices(t, billing.Rates{CPUPerMinute: billing.Unit, StartFee: 2 * billing.Unit, Multiplier: 1})
				f.grant(t, 10*billing.Unit)
				j := f.submit(t, 1, 0, 0)
				start := f.clock.Now()
				if err := f.jobs.MarkRunning(f.sys, j.ID, start); err != nil {
					t.Fatal(err)
				}
				f.clock.Advance(5*time.Minute + 10*time.Second)
				if stopped := f.tick(t); len(stopped) != 0 {
					t.Fatalf("stopped %v with tokens left", stopped)
				}
				if b := f.balance(t); b != 3*billing.Unit {
					t.Fatalf("balance after 5 minutes = %v, want 3", b)
				}
				f.clock.Advance(3 * time.Minute)
				stopped := f.tick(t)
				got, err := f.db.Ent.Job.Get(f.sys, j.ID)
				if err != nil {
					t.Fatal(err)
				}
				switch policy {
				case tenant.BudgetPolicyStop:
					if len(stopped) != 1 || got.Status != job.StatusCancelled || got.StatusReason != "out of tokens" {
						t.Fatalf("stop policy: stopped %v, job %s (%s)", stopped, got.Status, got.StatusReason)
					}
					// Charged to the boundary of the last minute the balance
					// covered: 8 minutes, and nothing into the red.
					if b := f.balance(t); b != 0 {
						t.Fatalf("balance after stop = %v, want 0", b)
					}
				case tenant.BudgetPolicyFinish:
					if len(stopped) != 0 || got.Status != job.StatusRunning {
						t.Fatalf("finish policy: stopped %v, job %s", stopped, got.Status)
					}
					f.clock.Advance(10 * time.Minute)
					f.tick(t)
					if b := f.balance(t); b != -10*billing.Unit {
						t.Fatalf("balance after 18 minutes = %v, want -10", b)
					}
				}
				_, err = f.jobs.Submit(f.admin, jobspec.Job{Queue: "default", Services: []jobspec.Service{{Name: "x", Command: []string{"true"}, CPU: 1}}})
				var fe *fault.Error
				if !errors.As(err, &fe) || fe.Code != fault.InsufficientTokens {
					t.Fatalf("submission with no tokens left: %v", err)
				}
			})
		})
	}
}

// The estimate for N minutes is what a job that runs N minutes is charged.
func TestEstimateEqualsCharges(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		f := newFixture(t, url, tenant.BudgetPolicyFinish)
		f.grant(t, 1000*billing.Unit)
		spec := jobspec.Job{Queue: "default", Services: []jobspec.Service{
			{Name: "a", Command: []string{"true"}, CPU: 1.5, MemoryMiB: 3000, GPUs: 2, GPUTypes: []string{"A10"}},
			{Name: "b", Command: []string{"true"}, CPU: 0.5, MemoryMiB: 100},
		}}
		const minutes = 17
		est, err := f.jobs.Estimate(f.admin, spec, minutes)
		if err != nil {
			t.Fatal(err)
		}
		j, err := f.jobs.Submit(f.admin, spec)
		if err != nil {
			t.Fatal(err)
		}
		start := f.clock.Now()
		if err := f.jobs.MarkRunning(f.sys, j.ID, start); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(minutes * time.Minute)
		if err := f.jobs.MarkEnded(f.sys, j.ID, job.StatusComplete, "exit 0", f.clock.Now()); err != nil {
			t.Fatal(err)
		}
		f.tick(t)
		var total billing.Tokens
		for _, c := range f.charges(t, j.ID) {
			total += c.Tokens
		}
		if total != est.Total || est.Total == 0 {
			t.Fatalf("charged %v for %d minutes; estimate said %v", total, minutes, est.Total)
		}
	})
}
