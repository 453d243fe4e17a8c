package workers_test

import (
	"context"
	"database/sql"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"entgo.io/ent/dialect"

	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/inventory"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/workers"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

type world struct {
	tn    *fixture.Tenant
	db    *database.DB
	rc    *workers.Clients
	jobs  *jobs.Service
	sys   context.Context
	admin context.Context
	queue string
	ten   string
}

func newWorld(t testing.TB, url string) *world {
	t.Helper()
	tn := fixture.New(t, url, fixture.TenantOptions{Slug: "w", Policy: tenant.BudgetPolicyFinish})
	rc, err := workers.NewClients(tn.DB, workers.Deps{Ent: tn.DB.Ent, Log: fixture.Log()})
	if err != nil {
		t.Fatal(err)
	}
	js := fixture.Jobs(tn.DB, nil)
	js.Schedule = workers.InsertScheduleJob(rc)
	return &world{tn: tn, db: tn.DB, rc: rc, sys: fixture.Sys(), queue: tn.DefaultQueue, ten: tn.ID, jobs: js, admin: tn.AsAdmin()}
}

func (w *world) submit(t testing.TB, cpu float64) string {
	t.Helper()
	j, err := w.jobs.Submit(w.admin, jobspec.Job{Queue: "default", Services: []jobspec.Service{
		{Name: "main", Command: []string{"true"}, CPU: cpu, MemoryMiB: 64},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return j.ID
}

// startRunner starts River's working client until the test ends.
func (w *world) startRunner(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if err := w.rc.Runner.Start(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop, done := context.WithTimeout(context.Background(), 10*time.Second)
		defer done()
		_ = w.rc.Runner.Stop(stop)
		cancel()
	})
}

func (w *world) passes(t *testing.T) int {
	t.Helper()
	var all int
	err := w.db.SQL.QueryRow("SELECT count(*) FROM river_job WHERE kind = 'schedule_queue'").Scan(&all)
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// Submissions coalesce into one pass per queue and backup window, which
// starts BackupDelay after the window; a window's changes after the
// second write none.
func TestScheduleQueueCoalesces(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		w := newWorld(t, url)
		now := time.Now().Truncate(time.Second)
		workers.SetClock(w.rc, func() time.Time { return now })
		for range 5 {
			w.submit(t, 1)
		}
		if all := w.passes(t); all != 1 {
			t.Fatalf("after 5 submissions: %d passes, want 1", all)
		}
		var at time.Time
		if err := w.db.SQL.QueryRow("SELECT scheduled_at FROM river_job WHERE kind = 'schedule_queue'").Scan(&at); err != nil {
			t.Fatal(err)
		}
		if want := workers.BackupAt(now); !at.Equal(want) {
			t.Fatalf("the pass starts at %s, want %s", at, want)
		}
		// Later submissions rely on that waiting pass and write nothing:
		// with its row gone, none comes back.
		if _, err := w.db.SQL.Exec("DELETE FROM river_job"); err != nil {
			t.Fatal(err)
		}
		w.submit(t, 1)
		if all := w.passes(t); all != 0 {
			t.Fatalf("a submission while a pass waits: %d passes written, want 0", all)
		}
		// Not known: written again, once.
		workers.ForgetPasses(w.rc)
		w.submit(t, 1)
		w.submit(t, 1)
		if all := w.passes(t); all != 1 {
			t.Fatalf("after the pass is forgotten: %d passes, want 1", all)
		}
		// The next window has a pass of its own.
		now = now.Add(workers.BackupDelay)
		for range 3 {
			w.submit(t, 1)
		}
		if all := w.passes(t); all != 2 {
			t.Fatalf("submissions of the next window: %d passes, want 2", all)
		}
		// The helpers for nodes coming online go through the same path.
		if err := workers.ScheduleQueues(context.Background(), w.rc, w.db.SQL, []string{w.queue}); err != nil {
			t.Fatal(err)
		}
		if all := w.passes(t); all != 2 {
			t.Fatalf("%d passes, want still 2", all)
		}
		// InsertScheduleJob of an unknown job fails clearly.
		tx, err := w.db.SQL.Begin()
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if err := workers.InsertScheduleJob(w.rc)(context.Background(), tx, "job_missing"); err == nil {
			t.Fatal("scheduling a missing job: no error")
		}
	})
}

// With River running, a submitted job lands on the queue's online node.
func TestScheduleQueueWorkerPlaces(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		w := newWorld(t, url)
		n := w.tn.AddNode(t, fixture.Node{Name: "n1", Inventory: inventory.Inventory{CPUs: 4, MemoryMiB: 1024}, Queues: []string{w.queue}})
		w.startRunner(t)
		fits, waits := w.submit(t, 3), w.submit(t, 3)
		deadline := time.Now().Add(20 * time.Second)
		for {
			placed, err := w.db.Ent.Service.Query().Where(service.JobID(fits), service.NodeID(n.ID)).Exist(w.sys)
			if err != nil {
				t.Fatal(err)
			}
			j, err := w.db.Ent.Job.Get(w.sys, waits)
			if err != nil {
				t.Fatal(err)
			}
			if placed && j.StatusReason != "waiting to be scheduled" {
				t.Logf("waiting job: %s", j.StatusReason)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("not scheduled in time: placed %v, reason of the other %q", placed, j.StatusReason)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// A node coming online, or a job ending, schedules every queue that can use
// the capacity.
func TestInsertScheduleNodeAndFreed(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		w := newWorld(t, url)
		other, lone := w.tn.AddQueue(t, "other"), w.tn.AddQueue(t, "lone")
		n := w.tn.AddNode(t, fixture.Node{Name: "n1", Inventory: inventory.Inventory{CPUs: 4, MemoryMiB: 1024}, Queues: []string{w.queue, other.ID}})
		queued := func() map[string]bool {
			got := map[string]bool{}
			for _, q := range []string{w.queue, other.ID, lone.ID} {
				var k int
				if err := w.db.SQL.QueryRow("SELECT count(*) FROM river_job WHERE kind = 'schedule_queue' AND unique_key IS NOT NULL AND " +
					argsText(w.db) + " LIKE '%" + q + "%'").Scan(&k); err != nil {
					t.Fatal(err)
				}
				got[q] = k > 0
			}
			if _, err := w.db.SQL.Exec("DELETE FROM river_job"); err != nil {
				t.Fatal(err)
			}
			return got
		}
		inTx := func(fn func(context.Context, *sql.Tx, string) error, id string) {
			tx, err := w.db.SQL.Begin()
			if err != nil {
				t.Fatal(err)
			}
			if err := fn(context.Background(), tx, id); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		inTx(workers.InsertScheduleNode(w.rc), n.ID)
		if got := queued(); !got[w.queue] || !got[other.ID] || got[lone.ID] {
			t.Fatalf("node online queued %v, want default and other", got)
		}
		j := w.submit(t, 1)
		queued()
		if err := w.db.Ent.Service.Update().Where(service.JobID(j)).SetNodeID(n.ID).Exec(w.sys); err != nil {
			t.Fatal(err)
		}
		inTx(workers.InsertScheduleFreed(w.rc), j)
		if got := queued(); !got[w.queue] || !got[other.ID] || got[lone.ID] {
			t.Fatalf("job end queued %v, want default and other", got)
		}
	})
}

// Submitting, the scheduling pass River runs and a job's end find their
// rows through indexes that narrow them to the job's or the queue's live
// ones, on a node with a history: no statement reads every job or service
// the server or the node ever had, nor every charge of the payer
// (database.HistoryReads). The queue is priced, so the submission reads
// the payer's balance.
func TestSchedulingReadsNoHistory(t *testing.T) {
	t.Parallel()
	w := newWorld(t, dbtest.SQLiteURL(t))
	w.tn.Price(t, w.queue, billing.Rates{CPUPerMinute: billing.Unit, StartFee: billing.Unit, Multiplier: 1})
	for range 20 {
		w.tn.Grant(t, ledger.Payer{UserID: w.tn.Admin.ID}, 1000*billing.Unit)
	}
	n := w.tn.AddNode(t, fixture.Node{Name: "n1", Inventory: inventory.Inventory{CPUs: 4, MemoryMiB: 1024}, Queues: []string{w.queue}})
	w.tn.AddHistory(t, n.ID, 300)
	ctx := context.Background()
	since, err := w.db.Mark(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w.startRunner(t)
	j := w.submit(t, 1)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		// By the job alone: this statement is checked too.
		s, err := w.db.Ent.Service.Query().Where(service.JobID(j)).Only(w.sys)
		if err != nil {
			t.Fatal(err)
		}
		if s.NodeID != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not placed in time")
		}
	}
	tx, err := w.db.SQL.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := workers.InsertScheduleFreed(w.rc)(ctx, tx, j); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	stmts := fixture.NoHistoryReads(t, w.db, since)
	has := func(s string) bool {
		return slices.ContainsFunc(stmts, func(q string) bool { return strings.Contains(q, s) })
	}
	if !has("queue_nodes") || !has("FROM `balances`") || len(stmts) < 10 {
		t.Fatalf("the flow ran %d statements, the freed query among them: %v, a balance read: %v", len(stmts), has("queue_nodes"), has("FROM `balances`"))
	}
}

func argsText(db *database.DB) string {
	if db.Dialect == dialect.SQLite {
		return "json(args)"
	}
	return "args::text"
}
