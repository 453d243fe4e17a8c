package jobs_test

import (
	"context"
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
	"github.com/levers9/levers9/internal/tenancy"
)

// runningOn submits a job to queue (interactive or not), places it on the
// machine's node and has it start at m.start.
func (m *machine) runningOn(t *testing.T, queue string, interactive bool) string {
	t.Helper()
	j := m.tn.SubmitSpec(t, m.js, nil, jobspec.Job{Queue: queue, Interactive: interactive,
		Services: []jobspec.Service{fixture.Service(1, 64)}})
	err := m.tn.DB.Ent.Service.Update().Where(service.JobID(j.ID)).
		SetNodeID(m.node).SetDispatchedAt(m.start).Exec(fixture.Sys())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.js.ServiceRunning(context.Background(), m.ref(j.ID, 1), nil, m.start); err != nil {
		t.Fatal(err)
	}
	return j.ID
}

// setIdleTimeout sets the idle timeout of queue id.
func (m *machine) setIdleTimeout(t *testing.T, id string, d time.Duration) {
	t.Helper()
	if err := m.tn.DB.Ent.Queue.UpdateOneID(id).SetIdleTimeoutSeconds(int(d / time.Second)).Exec(fixture.Sys()); err != nil {
		t.Fatal(err)
	}
}

// sweepAt sweeps at m.start+at and checks what it did.
func (m *machine) sweepAt(t *testing.T, at time.Duration, wantWarned, wantStopped int) {
	t.Helper()
	warned, stopped, err := m.js.IdleSweep(context.Background(), m.start.Add(at))
	if err != nil {
		t.Fatalf("sweep at %v: %v", at, err)
	}
	if warned != wantWarned || stopped != wantStopped {
		t.Fatalf("sweep at %v: warned %d, stopped %d; want %d, %d", at, warned, stopped, wantWarned, wantStopped)
	}
}

// idleWarnings are the reasons of job id's idle warnings, in order.
func (m *machine) idleWarnings(t *testing.T, id string) []string {
	t.Helper()
	evs, err := m.tn.DB.Ent.JobEvent.Query().
		Where(jobevent.JobID(id), jobevent.StatusEQ(jobevent.StatusRunning), jobevent.ReasonNEQ("running")).
		Order(jobevent.ByID()).All(fixture.Sys())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, e.Reason)
	}
	return out
}

const idleWarning25m = "idle for 25m: stops in 5m unless used (relay traffic, an attached terminal or exec)"

// An interactive job on a queue with a 30 minute idle timeout is warned
// 5 minutes ahead, once per idle period; activity puts its stop off; it is
// stopped like a cancel (services, event, run charged, meter closed).
// Batch jobs, and queues without a timeout, are left alone.
func TestIdleSweep(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		m := newMachine(t, url)
		ctx := context.Background()
		m.setIdleTimeout(t, m.tn.DefaultQueue, 30*time.Minute)
		forever := m.tn.AddQueue(t, "forever")
		inter := m.runningOn(t, tenancy.DefaultQueue, true)
		batch := m.runningOn(t, tenancy.DefaultQueue, false)
		untimed := m.runningOn(t, forever.Name, true)

		m.sweepAt(t, 24*time.Minute, 0, 0)
		m.sweepAt(t, 25*time.Minute, 1, 0)
		m.sweepAt(t, 25*time.Minute, 0, 0) // the same sweep again
		m.sweepAt(t, 29*time.Minute, 0, 0)
		if err := m.js.MarkActive(ctx, []string{inter}, m.start.Add(26*time.Minute)); err != nil {
			t.Fatal(err)
		}
		m.sweepAt(t, 30*time.Minute, 0, 0)
		m.sweepAt(t, 50*time.Minute, 0, 0)
		m.sweepAt(t, 51*time.Minute, 1, 0) // idle 25m since the activity
		m.sweepAt(t, 55*time.Minute, 0, 0)
		m.sweepAt(t, 56*time.Minute, 0, 1)
		m.sweepAt(t, 57*time.Minute, 0, 0)

		if got := m.idleWarnings(t, inter); len(got) != 2 || got[0] != idleWarning25m || got[1] != idleWarning25m {
			t.Fatalf("warnings %q; want two of %q", got, idleWarning25m)
		}
		sys := fixture.Sys()
		j, err := m.tn.DB.Ent.Job.Get(sys, inter)
		if err != nil {
			t.Fatal(err)
		}
		end := m.start.Add(56 * time.Minute)
		if j.Status != job.StatusCancelled || j.StatusReason != "idle for 30m" || j.FinishedAt == nil || !j.FinishedAt.Equal(end) || !j.MeteringClosed {
			t.Fatalf("job %s %q finished %v closed %v; want CANCELLED, idle for 30m, at %v, metering closed",
				j.Status, j.StatusReason, j.FinishedAt, j.MeteringClosed, end)
		}
		// 56 minutes at 6 tokens a minute, and the start fee.
		var total billing.Tokens
		for _, ch := range m.tn.DB.Ent.Charge.Query().Where(charge.JobID(inter)).AllX(sys) {
			total += ch.Tokens
		}
		if want := (56*6 + 1) * billing.Unit; total != want {
			t.Fatalf("charged %v; want %v", total, want)
		}

		// Days later, the others still run, never warned.
		m.sweepAt(t, 72*time.Hour, 0, 0)
		for _, id := range []string{batch, untimed} {
			j, err := m.tn.DB.Ent.Job.Get(sys, id)
			if err != nil {
				t.Fatal(err)
			}
			if j.Status != job.StatusRunning {
				t.Fatalf("job %s is %s %q; want RUNNING", id, j.Status, j.StatusReason)
			}
			if got := m.idleWarnings(t, id); len(got) != 0 {
				t.Fatalf("job %s warned %q", id, got)
			}
		}
	})
}

// A job idle past its timeout without a warning (the sweeps paused, or
// the timeout was just set) is warned first and stopped only once the
// warning has been up for the warning time.
func TestIdleSweepWarnsBeforeStopping(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		m := newMachine(t, url)
		id := m.runningOn(t, tenancy.DefaultQueue, true)
		m.sweepAt(t, 2*time.Hour, 0, 0) // no timeout yet
		m.setIdleTimeout(t, m.tn.DefaultQueue, 10*time.Minute)
		m.sweepAt(t, 2*time.Hour, 1, 0)
		m.sweepAt(t, 2*time.Hour+time.Minute+59*time.Second, 0, 0)
		m.sweepAt(t, 2*time.Hour+2*time.Minute+30*time.Second, 0, 1)
		want := "idle for 2h: stops in 2m unless used (relay traffic, an attached terminal or exec)"
		if got := m.idleWarnings(t, id); len(got) != 1 || got[0] != want {
			t.Fatalf("warnings %q; want [%q]", got, want)
		}
		j, err := m.tn.DB.Ent.Job.Get(fixture.Sys(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != job.StatusCancelled || j.StatusReason != "idle for 122m" {
			t.Fatalf("job %s %q; want CANCELLED, idle for 122m", j.Status, j.StatusReason)
		}
	})
}

func TestIdleWarnAhead(t *testing.T) {
	t.Parallel()
	for timeout, want := range map[time.Duration]time.Duration{
		time.Hour:        5 * time.Minute,
		30 * time.Minute: 5 * time.Minute,
		25 * time.Minute: 5 * time.Minute,
		10 * time.Minute: 2 * time.Minute,
		time.Minute:      12 * time.Second,
	} {
		if got := jobs.IdleWarnAhead(timeout); got != want {
			t.Errorf("IdleWarnAhead(%v) = %v; want %v", timeout, got, want)
		}
	}
}

func TestIdleWarningReason(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		idle, left time.Duration
		want       string
	}{
		{25*time.Minute + 17*time.Second, 4*time.Minute + 43*time.Second, "idle for 25m: stops in 4m43s unless used"},
		{25 * time.Minute, 5 * time.Minute, "idle for 25m: stops in 5m unless used"},
		{3 * time.Hour, time.Hour, "idle for 3h: stops in 1h unless used"},
		{48*time.Second + 300*time.Millisecond, 12 * time.Second, "idle for 48s: stops in 12s unless used"},
	} {
		want := tc.want + " (relay traffic, an attached terminal or exec)"
		if got := jobs.IdleWarningReason(tc.idle, tc.left); got != want {
			t.Errorf("IdleWarningReason(%v, %v) = %q; want %q", tc.idle, tc.left, got, want)
		}
	}
}
