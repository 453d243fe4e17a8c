package jobs_test

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/jobevent"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/tenancy"
)

// machine is a priced tenant with one node, a jobs service whose Freed
// callback counts its calls, and a clock.
type machine struct {
	tn    *fixture.Tenant
	js    *jobs.Service
	node  string
	freed atomic.Int64
	start time.Time
}

func newMachine(t *testing.T, url string) *machine {
	t.Helper()
	m := &machine{tn: fixture.New(t, url, fixture.TenantOptions{}), start: time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)}
	m.tn.Price(t, m.tn.DefaultQueue, billing.Rates{CPUPerMinute: 6 * billing.Unit, StartFee: billing.Unit, Multiplier: 1})
	m.tn.Grant(t, ledger.Payer{UserID: m.tn.Admin.ID}, 100000*billing.Unit)
	m.node = m.tn.AddNode(t, fixture.Node{Name: "n1", Queues: []string{m.tn.DefaultQueue}}).ID
	m.js = fixture.Jobs(m.tn.DB, func() time.Time { return m.start.Add(time.Hour) })
	m.js.Freed = func(context.Context, *sql.Tx, string) error { m.freed.Add(1); return nil }
	return m
}

// placed submits a job and places its one service on the node, sent.
func (m *machine) placed(t *testing.T) string {
	t.Helper()
	return m.placedWith(t, 0)
}

func (m *machine) placedWith(t *testing.T, retries int) string {
	t.Helper()
	j := m.tn.SubmitSpec(t, m.js, nil, jobspec.Job{Queue: tenancy.DefaultQueue, Retries: retries, Services: []jobspec.Service{fixture.Service(1, 64)}})
	err := m.tn.DB.Ent.Service.Update().Where(service.JobID(j.ID)).
		SetNodeID(m.node).SetDispatchedAt(m.start).Exec(fixture.Sys())
	if err != nil {
		t.Fatal(err)
	}
	return j.ID
}

// running places a job and has its service report running.
func (m *machine) running(t *testing.T) string {
	t.Helper()
	id := m.placed(t)
	if err := m.js.ServiceRunning(context.Background(), m.ref(id, 1), nil, m.start); err != nil {
		t.Fatal(err)
	}
	return id
}

func (m *machine) ref(id string, attempt int) jobs.ServiceRef {
	return jobs.ServiceRef{JobID: id, Service: "main", NodeID: m.node, Attempt: attempt}
}

// snapshot is every row a transition of job id may write, as text.
func (m *machine) snapshot(t *testing.T, id string) string {
	t.Helper()
	sys := fixture.Sys()
	c := m.tn.DB.Ent
	j, err := c.Job.Get(sys, id)
	if err != nil {
		t.Fatal(err)
	}
	svcs, err := c.Service.Query().Where(service.JobID(id)).Order(service.ByName()).All(sys)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := c.JobEvent.Query().Where(jobevent.JobID(id)).Order(jobevent.ByID()).All(sys)
	if err != nil {
		t.Fatal(err)
	}
	chs, err := c.Charge.Query().Where(charge.JobID(id)).All(sys)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "job %s %s %q attempt=%d started=%v finished=%v metered=%d closed=%v updated=%v\n", j.ID, j.Status, j.StatusReason,
		j.Attempt, j.StartedAt, j.FinishedAt, j.MeteredMinutes, j.MeteringClosed, j.UpdatedAt)
	for _, s := range svcs {
		fmt.Fprintf(&b, "service %s %s %q node=%s sent=%v started=%v finished=%v exit=%v updated=%v\n", s.Name, s.Status, s.StatusReason,
			s.NodeID, s.DispatchedAt, s.StartedAt, s.FinishedAt, s.ExitCode, s.UpdatedAt)
	}
	for _, e := range evs {
		fmt.Fprintf(&b, "event %s %q %v\n", e.Status, e.Reason, e.At)
	}
	var keys []string
	for _, ch := range chs {
		keys = append(keys, fmt.Sprintf("charge %s %v %s", ch.IdempotencyKey, ch.Tokens, ch.Reason))
	}
	sort.Strings(keys)
	b.WriteString(strings.Join(keys, "\n"))
	fmt.Fprintf(&b, "\nfreed %d", m.freed.Load())
	return b.String()
}

// A transition the job's state refuses writes nothing: no job or service
// change, no job event, no charge, no scheduling of freed capacity.
func TestRefusedTransitionsWriteNothing(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		m := newMachine(t, url)
		ctx := context.Background()
		at := m.start.Add(30 * time.Minute)
		setups := map[string]func(t *testing.T) string{
			"pending": m.placed,
			"running": m.running,
			"complete": func(t *testing.T) string {
				id := m.running(t)
				if _, err := m.js.ServiceEnded(ctx, m.ref(id, 1), jobs.ServiceEnd{}, m.start.Add(time.Minute)); err != nil {
					t.Fatal(err)
				}
				return id
			},
			"cancelled": func(t *testing.T) string {
				id := m.running(t)
				if _, err := m.js.Cancel(m.tn.AsAdmin(), id); err != nil {
					t.Fatal(err)
				}
				return id
			},
			"requeued to attempt 2": func(t *testing.T) string {
				id := m.placedWith(t, 1)
				if err := m.js.ServiceRunning(ctx, m.ref(id, 1), nil, m.start); err != nil {
					t.Fatal(err)
				}
				if requeued, err := m.js.NodeLost(ctx, id, m.start.Add(time.Minute)); err != nil || !requeued {
					t.Fatalf("NodeLost = %v, %v; want a requeue", requeued, err)
				}
				return id
			},
		}
		transitions := map[string]func(id string) error{
			"running":         func(id string) error { return m.js.MarkRunning(ctx, id, at) },
			"idle-stopped":    func(id string) error { _, err := m.js.IdleStopped(ctx, id, 30*time.Minute, at); return err },
			"completed":       func(id string) error { return m.js.MarkEnded(ctx, id, job.StatusComplete, "exit 0", at) },
			"failed":          func(id string) error { return m.js.MarkEnded(ctx, id, job.StatusError, "boom", at) },
			"node lost":       func(id string) error { _, err := m.js.NodeLost(ctx, id, at); return err },
			"lost on restart": func(id string) error { return m.js.LostOnRestart(ctx, id, at) },
			"service running (attempt 1)": func(id string) error {
				return m.js.ServiceRunning(ctx, m.ref(id, 1), nil, at)
			},
			"service exited (attempt 1)": func(id string) error {
				_, err := m.js.ServiceEnded(ctx, m.ref(id, 1), jobs.ServiceEnd{}, at)
				return err
			},
			"service failed (attempt 1)": func(id string) error {
				_, err := m.js.ServiceEnded(ctx, m.ref(id, 1), jobs.ServiceEnd{Failed: true, Reason: "oom"}, at)
				return err
			},
		}
		// Which of the transitions each state refuses.
		for _, tc := range []struct {
			state   string
			refuses []string
		}{
			{"pending", []string{"idle-stopped", "lost on restart" /* it applies: see below */}},
			{"running", []string{"running", "service running (attempt 1)"}},
			{"complete", []string{"running", "idle-stopped", "completed", "failed", "node lost", "lost on restart", "service running (attempt 1)"}},
			{"cancelled", []string{"running", "idle-stopped", "completed", "failed", "node lost", "lost on restart", "service running (attempt 1)"}},
			{"requeued to attempt 2", []string{"idle-stopped", "service running (attempt 1)", "service exited (attempt 1)", "service failed (attempt 1)"}},
		} {
			for _, name := range tc.refuses {
				if tc.state == "pending" && name == "lost on restart" {
					continue // a pending job fails when its agent loses it
				}
				t.Run(tc.state+"/"+name, func(t *testing.T) {
					id := setups[tc.state](t)
					before := m.snapshot(t, id)
					if err := transitions[name](id); err != nil {
						t.Fatal(err)
					}
					if after := m.snapshot(t, id); after != before {
						t.Fatalf("a refused transition wrote:\nbefore:\n%s\nafter:\n%s", before, after)
					}
				})
			}
		}
	})
}

// IdleStopped ends a running job like a cancel, with its reason: services
// stopped, an event, its run charged, its capacity freed.
func TestIdleStopped(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		m := newMachine(t, url)
		ctx := context.Background()
		id := m.running(t)
		at := m.start.Add(90 * time.Second)
		stopped, err := m.js.IdleStopped(ctx, id, 30*time.Minute, at)
		if err != nil || !stopped {
			t.Fatalf("IdleStopped = %v, %v", stopped, err)
		}
		sys := fixture.Sys()
		j, err := m.tn.DB.Ent.Job.Get(sys, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != job.StatusCancelled || j.StatusReason != "idle for 30m" || j.FinishedAt == nil || !j.FinishedAt.Equal(at) {
			t.Fatalf("job %s %q finished %v; want CANCELLED, idle for 30m, at %v", j.Status, j.StatusReason, j.FinishedAt, at)
		}
		svc, err := m.tn.DB.Ent.Service.Query().Where(service.JobID(id)).Only(sys)
		if err != nil {
			t.Fatal(err)
		}
		if svc.Status != service.StatusCancelled || svc.StatusReason != "idle for 30m" {
			t.Fatalf("service %s %q; want CANCELLED, idle for 30m", svc.Status, svc.StatusReason)
		}
		ev, err := m.tn.DB.Ent.JobEvent.Query().Where(jobevent.JobID(id), jobevent.StatusEQ(jobevent.StatusCancelled)).Only(sys)
		if err != nil || ev.Reason != "idle for 30m" {
			t.Fatalf("cancel event %v, %v", ev, err)
		}
		// 90 s at 6 tokens a minute, and the start fee.
		var total billing.Tokens
		for _, ch := range m.tn.DB.Ent.Charge.Query().Where(charge.JobID(id)).AllX(sys) {
			total += ch.Tokens
		}
		if want := 10 * billing.Unit; total != want {
			t.Fatalf("charged %v; want %v", total, want)
		}
		if n := m.freed.Load(); n != 1 {
			t.Fatalf("freed capacity scheduled %d times; want 1", n)
		}
		// Again: refused, nothing more.
		if stopped, err := m.js.IdleStopped(ctx, id, 30*time.Minute, at.Add(time.Minute)); err != nil || stopped {
			t.Fatalf("second IdleStopped = %v, %v; want refused", stopped, err)
		}
		if n := m.freed.Load(); n != 1 {
			t.Fatalf("freed capacity scheduled %d times; want 1", n)
		}
	})
}

func TestReasonIdle(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		30 * time.Minute: "idle for 30m",
		2 * time.Hour:    "idle for 2h",
		90 * time.Minute: "idle for 90m",
		45 * time.Second: "idle for 45s",
	} {
		if got := jobs.ReasonIdle(d); got != want {
			t.Errorf("ReasonIdle(%v) = %q; want %q", d, got, want)
		}
	}
}
