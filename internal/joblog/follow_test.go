package joblog_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// world is a database with one tenant and one submitted job; bus and
// other stand for two replicas on PostgreSQL (one bus on SQLite).
type world struct {
	db         *database.DB
	jobs       *jobs.Service
	logs       *joblog.Service
	bus, other *notify.Bus
	admin      context.Context
	job        string
}

func newWorld(t testing.TB, url string) *world {
	t.Helper()
	tn := fixture.New(t, url, fixture.TenantOptions{Slug: "acme", Policy: tenant.BudgetPolicyFinish})
	db, log := tn.DB, fixture.Log()
	w := &world{db: db, bus: notify.New(db.Pool, log), admin: tn.AsAdmin()}
	t.Cleanup(w.bus.Close)
	w.other = w.bus
	if db.Pool != nil {
		w.other = notify.New(db.Pool, log)
		t.Cleanup(w.other.Close)
	}
	w.logs = &joblog.Service{DB: db, Bus: w.bus, Log: log}
	w.jobs = fixture.Jobs(db, nil)
	w.jobs.Bus = w.other
	w.job = tn.Submit(t, w.jobs, nil, fixture.Service(1, 64)).ID
	return w
}

// add stores lines from..to and signals them from the other replica.
func (w *world) add(t *testing.T, from, to int) {
	t.Helper()
	var lines []wire.LogLine
	for i := from; i <= to; i++ {
		lines = append(lines, wire.LogLine{Service: "main", Stream: wire.Stdout, Seq: uint64(i), Time: time.Now(), Text: fmt.Sprint(i)})
	}
	if err := w.logs.Append(context.Background(), w.job, 1, lines); err != nil {
		t.Fatal(err)
	}
	if err := w.other.Publish(context.Background(), notify.TopicJob, w.job); err != nil {
		t.Fatal(err)
	}
}

func expect(t *testing.T, ch <-chan *joblog.Line, from, to int64) {
	t.Helper()
	for want := from; want <= to; want++ {
		select {
		case l, ok := <-ch:
			if !ok {
				t.Fatalf("closed before line %d", want)
			}
			if l.Seq != want {
				t.Fatalf("got line %d, want %d", l.Seq, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no line %d", want)
		}
	}
}

func expectClosed(t *testing.T, ch <-chan *joblog.Line) {
	t.Helper()
	select {
	case l, ok := <-ch:
		if ok {
			t.Fatalf("got line %d, want the end", l.Seq)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("not closed")
	}
}

// Lines arrive in order across replicas, more than a page at once, a late
// line fills its gap, and the follow ends with the job.
func TestFollow(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		w := newWorld(t, url)
		w.add(t, 1, 1200)
		ch, err := w.logs.Follow(w.admin, w.job, 0, 1, joblog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		expect(t, ch, 1, 1200)
		w.add(t, 1203, 1205)
		w.add(t, 1201, 1202)
		expect(t, ch, 1201, 1205)
		if err := w.jobs.MarkEnded(w.admin, w.job, job.StatusComplete, "done", time.Now()); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, ch)

		// After the end, a follow from the middle replays the rest and ends.
		ch, err = w.logs.Follow(w.admin, w.job, 0, 1204, joblog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		expect(t, ch, 1204, 1205)
		expectClosed(t, ch)
	})
}

// A missing line is skipped after GapWait rather than stalling forever.
func TestFollowSkipsLostLines(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		w := newWorld(t, url)
		w.add(t, 1, 2)
		w.add(t, 4, 5)
		// The wait starts when the follower meets the gap, which may be
		// before this goroutine has read lines 1 and 2: count from before
		// the follow began, the only lower bound a loaded machine keeps.
		start := time.Now()
		ch, err := w.logs.Follow(w.admin, w.job, 0, 1, joblog.Options{GapWait: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		expect(t, ch, 1, 2)
		expect(t, ch, 4, 5)
		if time.Since(start) < 300*time.Millisecond {
			t.Error("the gap was skipped without waiting")
		}
	})
}

// A consumer that never reads is dropped with ErrTooSlow; a cancelled one
// ends quietly. Either way the goroutine exits.
func TestFollowEnds(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, url string) {
		w := newWorld(t, url)
		w.add(t, 1, 50)
		errc := make(chan error, 1)
		_, err := w.logs.Follow(w.admin, w.job, 0, 1, joblog.Options{
			Buffer: 4, StallAfter: 200 * time.Millisecond, OnError: func(err error) { errc <- err },
		})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-errc:
			if !errors.Is(err, joblog.ErrTooSlow) {
				t.Fatalf("got %v, want ErrTooSlow", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the slow consumer was not dropped")
		}
		waitNone(t, w.logs)

		ctx, cancel := context.WithCancel(w.admin)
		ch, err := w.logs.Follow(ctx, w.job, 0, 1, joblog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		expect(t, ch, 1, 50)
		cancel()
		for range ch {
		}
		waitNone(t, w.logs)
	})
}

func waitNone(t *testing.T, logs *joblog.Service) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for logs.Running() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d follows still running", logs.Running())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Another tenant's viewer cannot follow the job; events replay and end.
func TestFollowPrivacyAndEvents(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		w := newWorld(t, url)
		stranger := viewer.NewContext(context.Background(), &viewer.Viewer{UserID: "usr_x", TenantID: "tnt_other", EnvironmentID: "env_other"})
		if _, err := w.logs.Follow(stranger, w.job, 0, 1, joblog.Options{}); err == nil {
			t.Error("another tenant followed the logs")
		}
		if _, err := w.logs.FollowEvents(stranger, w.job, joblog.Options{}); err == nil {
			t.Error("another tenant followed the events")
		}
		ch, err := w.logs.FollowEvents(w.admin, w.job, joblog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		next := func() *joblog.Event {
			select {
			case e := <-ch:
				return e
			case <-time.After(30 * time.Second):
				t.Fatal("no event")
				return nil
			}
		}
		if e := next(); e == nil || e.Status != job.StatusPending {
			t.Fatalf("first event %+v, want PENDING", e)
		}
		if _, err := w.jobs.Cancel(w.admin, w.job); err != nil {
			t.Fatal(err)
		}
		var last *joblog.Event
		for e := next(); e != nil; e = next() {
			last = e
		}
		if last == nil || last.Status != job.StatusCancelled {
			t.Fatalf("last event %+v, want CANCELLED", last)
		}
	})
}
