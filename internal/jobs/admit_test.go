package jobs_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/tenancy"
)

// TestStopAdmitsOnTopOfPendingJobs: under `stop` a payer's pending jobs
// commit their start fee and first minute, so submissions (here twelve at
// once, each in its own transaction) are admitted only as far as the
// balance covers all of them, and starting every admitted job leaves the
// balance at or above zero. Reproduces the issue: 1.866667 tokens, a start
// fee of 0.5 and 1 a minute, the node down: all four submissions were
// admitted and the balance ended at -0.466666.
func TestStopAdmitsOnTopOfPendingJobs(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		tn := fixture.New(t, url, fixture.TenantOptions{Policy: tenant.BudgetPolicyStop})
		tn.Price(t, tn.DefaultQueue, billing.Rates{CPUPerMinute: billing.Unit, StartFee: billing.Unit / 2, Multiplier: 1})
		granted := billing.Unit*1866667/1000000 + billing.Unit*3 // 3 jobs of 1.5, and 0.366667 over
		tn.Grant(t, ledger.Payer{UserID: tn.Admin.ID}, granted)
		js := fixture.Jobs(tn.DB, nil)
		const submitters = 12
		var wg sync.WaitGroup
		var mu sync.Mutex
		var admitted []string
		refused := 0
		for range submitters {
			wg.Go(func() {
				j, err := js.Submit(tn.AsAdmin(), jobspec.Job{Queue: tenancy.DefaultQueue, Services: []jobspec.Service{fixture.Service(1, 64)}})
				mu.Lock()
				defer mu.Unlock()
				var fe *fault.Error
				switch {
				case err == nil:
					admitted = append(admitted, j.ID)
				case errors.As(err, &fe) && fe.Code == fault.InsufficientTokens:
					refused++
				default:
					t.Errorf("submitting: %v", err)
				}
			})
		}
		wg.Wait()
		if len(admitted) != 3 || refused != submitters-3 {
			t.Fatalf("admitted %d, refused %d; want 3 admitted (1.5 tokens each of %v)", len(admitted), refused, granted)
		}
		// The node comes back: every admitted job starts.
		for _, id := range admitted {
			if err := js.MarkRunning(fixture.Sys(), id, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		bal, err := ledger.BalanceOf(fixture.Sys(), tn.DB.Ent, ledger.Payer{TenantID: tn.ID, UserID: tn.Admin.ID})
		if err != nil {
			t.Fatal(err)
		}
		if bal < 0 || bal != granted-3*billing.Unit/2 {
			t.Fatalf("balance %v after three starts; want %v", bal, granted-3*billing.Unit/2)
		}
	})
}

// TestStartFeeOncePerJob: a job requeued because its node was lost pays
// its start fee once, at its first start; its second attempt starts free.
func TestStartFeeOncePerJob(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		m := newMachine(t, url)
		id := m.placedWith(t, 1)
		if err := m.js.ServiceRunning(context.Background(), m.ref(id, 1), nil, m.start); err != nil {
			t.Fatal(err)
		}
		lost := m.start.Add(2 * time.Minute)
		if err := m.tn.DB.Ent.Node.UpdateOneID(m.node).SetStatus(node.StatusOffline).SetLastHeartbeatAt(lost).Exec(fixture.Sys()); err != nil {
			t.Fatal(err)
		}
		if back, err := m.js.NodeLost(context.Background(), id, lost.Add(time.Minute)); err != nil || !back {
			t.Fatalf("NodeLost = %v, %v; want requeued", back, err)
		}
		if err := m.js.MarkRunning(fixture.Sys(), id, lost.Add(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
		j := m.tn.DB.Ent.Job.GetX(fixture.Sys(), id)
		if j.Status != job.StatusRunning || j.Attempt != 2 {
			t.Fatalf("job %s attempt %d; want RUNNING attempt 2", j.Status, j.Attempt)
		}
		fees := m.tn.DB.Ent.Charge.Query().Where(charge.JobID(id), charge.KindEQ(charge.KindStart)).AllX(fixture.Sys())
		if len(fees) != 1 || fees[0].Tokens != billing.Unit || fees[0].Reason != "start fee" {
			t.Fatalf("start charges %+v; want one of 1 token, at the first attempt", fees)
		}
	})
}

// TestBilledFromTheFirstServiceRun: a job is billed from when its first
// service ran, even when that service exited (or failed) before the
// others started and the job counted as running.
func TestBilledFromTheFirstServiceRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		run     func(m *machine, ref func(string) jobs.ServiceRef, at func(int) time.Time) error
		status  job.Status
		compute int // minutes charged at 6 tokens
	}{
		{"first exits, second runs later", func(m *machine, ref func(string) jobs.ServiceRef, at func(int) time.Time) error {
			ctx := context.Background()
			if err := m.js.ServiceRunning(ctx, ref("a"), nil, at(0)); err != nil {
				return err
			}
			zero := 0
			if _, err := m.js.ServiceEnded(ctx, ref("a"), jobs.ServiceEnd{ExitCode: &zero}, at(1)); err != nil {
				return err
			}
			if err := m.js.ServiceRunning(ctx, ref("b"), nil, at(2)); err != nil {
				return err
			}
			_, err := m.js.ServiceEnded(ctx, ref("b"), jobs.ServiceEnd{ExitCode: &zero}, at(3))
			return err
		}, job.StatusComplete, 3},
		{"first fails before the second starts", func(m *machine, ref func(string) jobs.ServiceRef, at func(int) time.Time) error {
			ctx := context.Background()
			if err := m.js.ServiceRunning(ctx, ref("a"), nil, at(0)); err != nil {
				return err
			}
			code := 2
			_, err := m.js.ServiceEnded(ctx, ref("a"), jobs.ServiceEnd{ExitCode: &code, Failed: true, Reason: "exit 2"}, at(2))
			return err
		}, job.StatusError, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dbtest.Each(t, func(t *testing.T, url string) {
				m := newMachine(t, url)
				id := m.placedServices(t, "a", "b")
				ref := func(svc string) jobs.ServiceRef {
					return jobs.ServiceRef{JobID: id, Service: svc, NodeID: m.node, Attempt: 1}
				}
				at := func(minutes int) time.Time { return m.start.Add(time.Duration(minutes) * time.Minute) }
				if err := tc.run(m, ref, at); err != nil {
					t.Fatal(err)
				}
				j := m.tn.DB.Ent.Job.GetX(fixture.Sys(), id)
				if j.Status != tc.status || j.StartedAt == nil || !j.StartedAt.Equal(m.start) {
					t.Fatalf("job %s started %v; want %s started %v", j.Status, j.StartedAt, tc.status, m.start)
				}
				cs := m.tn.DB.Ent.Charge.Query().Where(charge.JobID(id), charge.KindEQ(charge.KindCompute)).AllX(fixture.Sys())
				var sum billing.Tokens
				for _, c := range cs {
					sum += c.Tokens
				}
				if want := billing.Tokens(tc.compute) * 6 * billing.Unit; sum != want {
					t.Fatalf("compute charged %v in %d charges; want %v", sum, len(cs), want)
				}
			})
		})
	}
}

// TestBilledToTheLastServiceStop: a job that ends while a service runs
// (cancelled here) is billed on to when its node reports that service
// stopped, to the second, once however often the report comes; under
// `stop` no further than the minute its payer held; not at all for a job
// stopped because its payer could not pay on.
func TestBilledToTheLastServiceStop(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		policy      tenant.BudgetPolicy
		outOfTokens bool
		stopAfter   time.Duration
		want        billing.Tokens // beyond the run to the cancel
	}{
		{"finish, 7 s", tenant.BudgetPolicyFinish, false, 7 * time.Second, billing.Partial(6*billing.Unit, 7*time.Second)},
		{"finish, 2 min", tenant.BudgetPolicyFinish, false, 2 * time.Minute, 12 * billing.Unit},
		{"stop, 7 s", tenant.BudgetPolicyStop, false, 7 * time.Second, billing.Partial(6*billing.Unit, 7*time.Second)},
		{"stop, 2 min: the held minute only", tenant.BudgetPolicyStop, false, 2 * time.Minute, billing.RunCost(6*billing.Unit, time.Minute) - billing.RunCost(6*billing.Unit, 30*time.Second)},
		{"stop, out of tokens", tenant.BudgetPolicyStop, true, 7 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dbtest.Each(t, func(t *testing.T, url string) {
				tn := fixture.New(t, url, fixture.TenantOptions{Policy: tc.policy})
				tn.Price(t, tn.DefaultQueue, billing.Rates{CPUPerMinute: 6 * billing.Unit, Multiplier: 1})
				tn.Grant(t, ledger.Payer{UserID: tn.Admin.ID}, 1000*billing.Unit)
				nodeID := tn.AddNode(t, fixture.Node{Name: "n1", Queues: []string{tn.DefaultQueue}}).ID
				start := time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)
				now := start
				js := fixture.Jobs(tn.DB, func() time.Time { return now })
				j := tn.SubmitSpec(t, js, nil, jobspec.Job{Queue: tenancy.DefaultQueue, Services: []jobspec.Service{fixture.Service(1, 64)}})
				if err := tn.DB.Ent.Service.Update().Where(service.JobID(j.ID)).SetNodeID(nodeID).SetDispatchedAt(start).Exec(fixture.Sys()); err != nil {
					t.Fatal(err)
				}
				ref := jobs.ServiceRef{JobID: j.ID, Service: "main", NodeID: nodeID, Attempt: 1}
				ctx := context.Background()
				if err := js.ServiceRunning(ctx, ref, nil, start); err != nil {
					t.Fatal(err)
				}
				now = start.Add(30 * time.Second)
				if tc.outOfTokens {
					if err := js.MarkEnded(fixture.Sys(), j.ID, job.StatusCancelled, jobs.OutOfTokens, now); err != nil {
						t.Fatal(err)
					}
				} else if _, err := js.Cancel(tn.AsAdmin(), j.ID); err != nil {
					t.Fatal(err)
				}
				ended := now
				stopped := ended.Add(tc.stopAfter)
				now = stopped.Add(time.Second) // the report arrives a moment later
				for range 2 {                  // a replayed report adds nothing
					if _, err := js.ServiceEnded(ctx, ref, jobs.ServiceEnd{Failed: true, Reason: "killed"}, stopped); err != nil {
						t.Fatal(err)
					}
				}
				cs := tn.DB.Ent.Charge.Query().Where(charge.JobID(j.ID), charge.KindEQ(charge.KindCompute)).AllX(fixture.Sys())
				var sum billing.Tokens
				for _, c := range cs {
					sum += c.Tokens
				}
				if want := billing.RunCost(6*billing.Unit, ended.Sub(start)) + tc.want; sum != want {
					t.Fatalf("compute charged %v in %d charges; want %v", sum, len(cs), want)
				}
			})
		})
	}
}

// TestRanAttempt: after a job is requeued from its lost node, that node's
// late output of the attempt it ran is taken; no other node's, no other
// attempt's and no other service's.
func TestRanAttempt(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		m := newMachine(t, url)
		id := m.placedWith(t, 1)
		ctx := context.Background()
		if err := m.js.ServiceRunning(ctx, m.ref(id, 1), nil, m.start); err != nil {
			t.Fatal(err)
		}
		other := m.tn.AddNode(t, fixture.Node{Name: "n2", Queues: []string{m.tn.DefaultQueue}}).ID
		if back, err := m.js.NodeLost(ctx, id, m.start.Add(time.Minute)); err != nil || !back {
			t.Fatalf("NodeLost = %v, %v; want requeued", back, err)
		}
		for _, c := range []struct {
			ref  jobs.ServiceRef
			want bool
		}{
			{m.ref(id, 1), true},
			{jobs.ServiceRef{JobID: id, Service: "main", NodeID: other, Attempt: 1}, false},
			{m.ref(id, 2), false},
			{jobs.ServiceRef{JobID: id, Service: "ghost", NodeID: m.node, Attempt: 1}, false},
		} {
			if got, err := m.js.RanAttempt(ctx, c.ref); err != nil || got != c.want {
				t.Errorf("RanAttempt(%+v) = %v, %v; want %v", c.ref, got, err, c.want)
			}
		}
	})
}
