package metering_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/metering"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// world is a tenant with a priced queue on a fresh database.
type world struct {
	db    *database.DB
	tn    *fixture.Tenant
	clock *fixture.Clock
	jobs  *jobs.Service
	meter *metering.Meter
	admin context.Context // acting as the tenant admin
	sys   context.Context
	t     *ent.Tenant
	queue *ent.Queue
	user  string
	envID string
}

func newFixture(t testing.TB, url string, policy tenant.BudgetPolicy) *world {
	t.Helper()
	tn := fixture.New(t, url, fixture.TenantOptions{Slug: "meter", Policy: policy})
	c := fixture.NewClock(fixture.T0)
	f := &world{
		db: tn.DB, tn: tn, clock: c, sys: fixture.Sys(), t: tn.Ent, user: tn.Admin.ID, envID: tn.Env,
		jobs:  fixture.Jobs(tn.DB, c.Now),
		meter: &metering.Meter{DB: tn.DB, Log: fixture.Log(), Now: c.Now},
		admin: tn.AsAdmin(),
	}
	var err error
	if f.queue, err = tn.DB.Ent.Queue.Get(f.sys, tn.DefaultQueue); err != nil {
		t.Fatal(err)
	}
	f.setPrices(t, billing.Rates{
		GPU:          []billing.GPURate{{Type: "A10", PerMinute: 3 * billing.Unit}},
		CPUPerMinute: billing.Unit / 3, MemoryGiBPerMinute: billing.Unit / 7,
		StartFee: 5 * billing.Unit, Multiplier: 1.25,
	})
	return f
}

func (f *world) setPrices(t testing.TB, r billing.Rates) {
	t.Helper()
	f.tn.Price(t, f.queue.ID, r)
}

func (f *world) grant(t *testing.T, tokens billing.Tokens) {
	t.Helper()
	f.tn.Grant(t, ledger.Payer{UserID: f.user}, tokens)
}

func (f *world) submit(t *testing.T, cpu float64, memMiB int64, gpus int) *ent.Job {
	t.Helper()
	svc := jobspec.Service{Name: "main", Command: []string{"true"}, CPU: cpu, MemoryMiB: memMiB, GPUs: gpus}
	if gpus > 0 {
		svc.GPUTypes = []string{"A10"}
	}
	j, err := f.jobs.Submit(f.admin, jobspec.Job{Queue: "default", Services: []jobspec.Service{svc}})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func (f *world) charges(t *testing.T, jobID string) []*ent.Charge {
	t.Helper()
	cs, err := f.db.Ent.Charge.Query().Where(charge.JobID(jobID)).All(f.sys)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// run is one job of a random timeline, and what the formula says it costs.
type run struct {
	id              string
	started, ended  *time.Time
	startFee, price billing.Tokens
	cpu             float64
	mem             int64
	gpus            int
}

// The ledger equals the exact formula whatever happens around the meter:
// random starts and ends (complete, crash, node lost, cancel), meter runs
// at random times, meters that crash mid-tick, two meters at once, and price
// changes mid-run (a job keeps the prices it started with).
func TestLedgerMatchesFormula(t *testing.T) {
	t.Parallel()
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			dbtest.Each(t, func(t *testing.T, url string) { checkRandomTimeline(t, url, seed) })
		})
	}
}

func checkRandomTimeline(t *testing.T, url string, seed uint64) {
	f := newFixture(t, url, tenant.BudgetPolicyFinish)
	rng := rand.New(rand.NewPCG(seed, 42))
	f.grant(t, 1_000_000*billing.Unit)
	rates := billing.Rates{
		GPU:          []billing.GPURate{{Type: "A10", PerMinute: 3 * billing.Unit}},
		CPUPerMinute: billing.Unit / 3, MemoryGiBPerMinute: billing.Unit / 7,
		StartFee: 5 * billing.Unit, Multiplier: 1.25,
	}
	var runs []*run
	for range 10 {
		r := &run{cpu: float64(rng.IntN(8)+1) / 2, mem: int64(rng.IntN(4096) + 1), gpus: rng.IntN(3)}
		r.id = f.submit(t, r.cpu, r.mem, r.gpus).ID
		runs = append(runs, r)
	}
	crash := errors.New("meter crashed")
	for step := 0; step < 120; step++ {
		f.clock.Advance(time.Duration(rng.Int64N(int64(150 * time.Second))))
		now := f.clock.Now()
		switch x := rng.IntN(100); {
		case x < 20: // a pending job starts
			for _, r := range runs {
				if r.started == nil {
					if err := f.jobs.MarkRunning(f.sys, r.id, now); err != nil {
						t.Fatal(err)
					}
					r.started = &now
					r.startFee = rates.StartFee
					pm, err := billing.PerMinute(rates, usageOf(r))
					if err != nil {
						t.Fatal(err)
					}
					r.price = pm
					break
				}
			}
		case x < 35: // a running job ends: complete, crash, node lost or cancelled
			for _, r := range runs {
				if r.started != nil && r.ended == nil {
					status, reason := []job.Status{job.StatusComplete, job.StatusError, job.StatusError, job.StatusCancelled}[rng.IntN(4)],
						[]string{"exit 0", "exit 1", "node lost", "cancelled"}[rng.IntN(4)]
					if err := f.jobs.MarkEnded(f.sys, r.id, status, reason, now); err != nil {
						t.Fatal(err)
					}
					r.ended = &now
					break
				}
			}
		case x < 45: // prices change mid-run
			rates.CPUPerMinute = billing.Tokens(rng.Int64N(int64(billing.Unit)))
			rates.GPU[0].PerMinute = billing.Tokens(rng.Int64N(int64(10 * billing.Unit)))
			rates.StartFee = billing.Tokens(rng.Int64N(int64(10 * billing.Unit)))
			rates.Multiplier = float64(rng.IntN(20)+1) / 4
			f.setPrices(t, rates)
		case x < 60: // two meters at once
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i := range 2 {
				wg.Add(1)
				go func() { defer wg.Done(); _, errs[i] = f.meter.Tick(context.Background()) }()
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
		case x < 70: // a meter crashes before committing
			crashing := *f.meter
			crashing.Fault = func([]string) error { return crash }
			if _, err := crashing.Tick(context.Background()); err != nil && !errors.Is(err, crash) {
				t.Fatalf("crashing meter: %v", err)
			}
		default:
			if _, err := f.meter.Tick(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Everything ends; after a last tick the ledger is complete.
	for _, r := range runs {
		if r.started != nil && r.ended == nil {
			now := f.clock.Now()
			if err := f.jobs.MarkEnded(f.sys, r.id, job.StatusComplete, "exit 0", now); err != nil {
				t.Fatal(err)
			}
			r.ended = &now
		}
	}
	f.clock.Advance(time.Hour)
	for range 2 {
		if _, err := f.meter.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range runs {
		cs := f.charges(t, r.id)
		if r.started == nil {
			if len(cs) != 0 {
				t.Errorf("job %s never ran but has %d charges", r.id, len(cs))
			}
			continue
		}
		d := r.ended.Sub(*r.started)
		wantMinutes := int((d + time.Minute - 1) / time.Minute)
		var start, compute billing.Tokens
		var starts int
		minutes := map[string]bool{}
		for _, c := range cs {
			switch c.Kind {
			case charge.KindStart:
				start += c.Tokens
				starts++
			case charge.KindCompute:
				compute += c.Tokens
				minutes[c.IdempotencyKey] = true
			default:
				t.Errorf("job %s has a %s charge", r.id, c.Kind)
			}
		}
		if r.startFee > 0 && starts != 1 || r.startFee == 0 && starts != 0 || start != r.startFee {
			t.Errorf("job %s: %d start charges of %v in all; want one of %v", r.id, starts, start, r.startFee)
		}
		for k := range wantMinutes {
			if !minutes[fmt.Sprintf("compute:%s:1:%d", r.id, k)] {
				t.Errorf("job %s: minute %d of %d not charged (ran %v)", r.id, k, wantMinutes, d)
			}
		}
		if len(minutes) != wantMinutes {
			t.Errorf("job %s: %d minutes charged, want %d (ran %v)", r.id, len(minutes), wantMinutes, d)
		}
		if want := formula(r.price, d); compute != want {
			t.Errorf("job %s: charged %v for %v at %v/min; formula says %v", r.id, compute, d, r.price, want)
		}
	}
}

func usageOf(r *run) billing.Usage {
	u := billing.Usage{CPUs: r.cpu, MemoryMiB: r.mem}
	if r.gpus > 0 {
		u.GPUs = []billing.GPUUse{{Type: "A10", Count: r.gpus}}
	}
	return u
}

// formula is the documented rule, written out independently of the code
// under test: whole minutes at the price, the last partial minute pro rata
// per started second.
func formula(price billing.Tokens, d time.Duration) billing.Tokens {
	full := d / time.Minute
	rest := d - full*time.Minute
	partial := math.Round(float64(price) * math.Ceil(rest.Seconds()) / 60)
	return price*billing.Tokens(full) + billing.Tokens(partial)
}
