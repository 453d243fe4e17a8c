package functions_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/auditevent"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/functions"
	"github.com/levers9/levers9/internal/tenancy"
)

// newCronWorld is a world whose functions service runs on a clock at
// fixture.T0, where minutes fall on known boundaries.
func newCronWorld(t *testing.T, url string) *world {
	t.Helper()
	w := newWorld(t, url)
	w.clock = fixture.NewClock(fixture.T0)
	w.fn.Now = w.clock.Now
	return w
}

// deployCron deploys a new version of app name with one CRON function
// "tick" on schedule expr and returns the function.
func (w *world) deployCron(t *testing.T, name, expr string) *ent.Function {
	t.Helper()
	a, err := w.fn.Deploy(w.tn.AsAdmin(), functions.AppSpec{Name: name, CodeHash: codeHash, Functions: []functions.FunctionSpec{
		{Name: "tick", Module: "app", Qualname: "tick", Queue: tenancy.DefaultQueue, Kind: function.KindCRON, Cron: expr}}})
	if err != nil {
		t.Fatalf("deploying %s: %v", name, err)
	}
	return a.Edges.Functions[0]
}

// fnRow re-reads function id.
func (w *world) fnRow(t *testing.T, id string) *ent.Function {
	t.Helper()
	f, err := w.tn.DB.Ent.Function.Get(fixture.Sys(), id)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// to moves the clock to at (forward only).
func (w *world) to(at time.Time) {
	if d := at.Sub(w.clock.Now()); d > 0 {
		w.clock.Advance(d)
	}
}

// fireConcurrently runs n FireSchedules passes at once, as n replicas
// would, and returns how many tasks they started in all.
func (w *world) fireConcurrently(t *testing.T, n int) int {
	t.Helper()
	var (
		mu    sync.Mutex
		fired int
		wg    sync.WaitGroup
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := w.fn.FireSchedules(context.Background())
			if err != nil {
				t.Errorf("FireSchedules: %v", err)
			}
			mu.Lock()
			fired += k
			mu.Unlock()
		}()
	}
	wg.Wait()
	return fired
}

// cronTasks are fn's CRON tasks, oldest first.
func (w *world) cronTasks(t *testing.T, fnID string) []*ent.Task {
	t.Helper()
	ts, err := w.tn.DB.Ent.Task.Query().Where(task.FunctionID(fnID), task.SourceEQ(task.SourceCRON)).
		Order(ent.Asc(task.FieldCreatedAt)).All(fixture.Sys())
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func (w *world) finish(t *testing.T, taskID string) {
	t.Helper()
	if err := w.tn.DB.Ent.Task.UpdateOneID(taskID).SetState(task.StateCOMPLETE).Exec(fixture.Sys()); err != nil {
		t.Fatal(err)
	}
}

// TestCronFiresOncePerTick: passes running at once (replicas) start one
// task per tick between them, each at its tick.
func TestCronFiresOncePerTick(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newCronWorld(t, url)
		w.to(fixture.T0.Add(10 * time.Second))
		f := w.deployCron(t, "nightly", "* * * * *")
		if f.NextRunAt == nil || !f.NextRunAt.Equal(fixture.T0.Add(time.Minute)) {
			t.Fatalf("next run %v, want %v", f.NextRunAt, fixture.T0.Add(time.Minute))
		}
		if n := w.fireConcurrently(t, 3); n != 0 {
			t.Fatalf("%d fired before the first tick", n)
		}
		for i := range 3 {
			tick := fixture.T0.Add(time.Duration(i+1) * time.Minute)
			w.to(tick.Add(2 * time.Second))
			if n := w.fireConcurrently(t, 4); n != 1 {
				t.Fatalf("tick %d: %d fired across 4 passes, want 1", i+1, n)
			}
			ts := w.cronTasks(t, f.ID)
			if len(ts) != i+1 {
				t.Fatalf("tick %d: %d cron tasks", i+1, len(ts))
			}
			row := w.fnRow(t, f.ID)
			if row.LastRunTaskID != ts[i].ID || !row.LastRunAt.Equal(tick) || !row.NextRunAt.Equal(tick.Add(time.Minute)) {
				t.Fatalf("tick %d: last %s at %v, next %v", i+1, row.LastRunTaskID, row.LastRunAt, row.NextRunAt)
			}
			if ts[i].OwnerID != w.tn.Admin.ID || len(ts[i].Args) != 0 {
				t.Errorf("the cron task is %s's with %d bytes of args", ts[i].OwnerID, len(ts[i].Args))
			}
			w.finish(t, ts[i].ID)
		}
	})
}

// TestCronSkipsWhilePreviousRuns: a tick finding the last run pending is
// skipped and recorded; the next one after it ends runs.
func TestCronSkipsWhilePreviousRuns(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newCronWorld(t, url)
		w.to(fixture.T0.Add(10 * time.Second))
		f := w.deployCron(t, "nightly", "* * * * *")
		w.to(fixture.T0.Add(time.Minute + time.Second))
		if n := w.fireConcurrently(t, 2); n != 1 {
			t.Fatalf("%d fired at the first tick", n)
		}
		first := w.cronTasks(t, f.ID)[0]
		w.to(fixture.T0.Add(2*time.Minute + time.Second))
		if n := w.fireConcurrently(t, 2); n != 0 {
			t.Fatalf("%d fired while the previous run is pending", n)
		}
		row := w.fnRow(t, f.ID)
		if row.SkippedRuns != 1 || !row.LastRunAt.Equal(fixture.T0.Add(2*time.Minute)) || row.LastRunTaskID != first.ID {
			t.Fatalf("after a skip: skipped %d, last run %v (%s)", row.SkippedRuns, row.LastRunAt, row.LastRunTaskID)
		}
		evs, err := w.tn.DB.Ent.AuditEvent.Query().Where(auditevent.Action(functions.ActionCronSkip)).All(fixture.Sys())
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 || evs[0].Target != f.ID || evs[0].ActorID != f.OwnerID || evs[0].Details["running"] != first.ID {
			t.Fatalf("skip audit: %+v", evs)
		}
		w.finish(t, first.ID)
		w.to(fixture.T0.Add(3*time.Minute + time.Second))
		if n := w.fireConcurrently(t, 2); n != 1 {
			t.Fatalf("%d fired after the previous run ended", n)
		}
	})
}

// TestCronDoesNotReplayMissedTicks: after a long gap (the server was
// down) no tick runs late; the schedule resumes at the next tick.
func TestCronDoesNotReplayMissedTicks(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newCronWorld(t, url)
		w.to(fixture.T0.Add(10 * time.Second))
		f := w.deployCron(t, "nightly", "*/5 * * * *")
		w.to(fixture.T0.Add(3*time.Hour + 30*time.Second))
		if n := w.fireConcurrently(t, 2); n != 0 {
			t.Fatalf("%d missed ticks replayed", n)
		}
		row := w.fnRow(t, f.ID)
		if want := fixture.T0.Add(3*time.Hour + 5*time.Minute); !row.NextRunAt.Equal(want) || row.LastRunAt != nil {
			t.Fatalf("after the gap: next %v (want %v), last %v", row.NextRunAt, want, row.LastRunAt)
		}
		if n := w.fireConcurrently(t, 2); n != 0 || len(w.cronTasks(t, f.ID)) != 0 {
			t.Fatalf("%d fired again before the next tick", n)
		}
		w.to(fixture.T0.Add(3*time.Hour + 5*time.Minute + time.Second))
		if n := w.fireConcurrently(t, 2); n != 1 {
			t.Fatalf("%d fired at the next tick", n)
		}
	})
}

// TestCronOnlyServingLiveVersionFires: of two versions only the live one
// runs the schedule; a stopped version never does.
func TestCronOnlyServingLiveVersionFires(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newCronWorld(t, url)
		w.to(fixture.T0.Add(10 * time.Second))
		v1 := w.deployCron(t, "nightly", "* * * * *")
		v2 := w.deployCron(t, "nightly", "* * * * *")
		w.to(fixture.T0.Add(time.Minute + time.Second))
		if n := w.fireConcurrently(t, 2); n != 1 || len(w.cronTasks(t, v2.ID)) != 1 || len(w.cronTasks(t, v1.ID)) != 0 {
			t.Fatalf("two versions: %d fired, want one task of the live version", n)
		}
		// Stopping v2 makes v1 live again: it fires from the next tick on.
		if _, err := w.fn.StopVersion(w.tn.AsAdmin(), v2.AppID, 2); err != nil {
			t.Fatal(err)
		}
		w.to(fixture.T0.Add(2*time.Minute + time.Second))
		if n := w.fireConcurrently(t, 2); n != 1 || len(w.cronTasks(t, v1.ID)) != 1 || len(w.cronTasks(t, v2.ID)) != 1 {
			t.Fatalf("after stopping v2: %d fired, v1 %d tasks, v2 %d", n, len(w.cronTasks(t, v1.ID)), len(w.cronTasks(t, v2.ID)))
		}
		w.finish(t, w.cronTasks(t, v1.ID)[0].ID)
		// The last version stopped stops the app: nothing fires.
		if _, err := w.fn.StopVersion(w.tn.AsAdmin(), v1.AppID, 1); err != nil {
			t.Fatal(err)
		}
		w.to(fixture.T0.Add(3*time.Minute + time.Second))
		if n := w.fireConcurrently(t, 2); n != 0 {
			t.Fatalf("%d fired of a stopped app", n)
		}
	})
}
