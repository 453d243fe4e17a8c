package scheduler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
)

// A pass reads its page of waiting jobs off the queue's index in their
// order (priority, age, ID), never sorting every waiting job of the queue
// to take the first page: with a backlog behind a full node, every job's
// end asks for such a pass (BenchmarkFullQueuePass).
func TestPassReadsItsPageInOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t, dbtest.SQLiteURL(t))
	ctx := context.Background()
	f.addNode(t, "full", inv(4, 16*gib, nil), true, f.queue)
	specs := make([]jobSpec, 100)
	for k := range specs {
		specs[k] = jobSpec{queue: f.queue, priority: k % 3, created: t0.Add(time.Duration(k) * time.Second), services: []svc{{cpu: 8, mem: 32 * gib}}}
	}
	f.addJobs(t, specs)
	stmts := f.passStatements(t, 0)
	pages := 0
	for _, q := range stmts {
		if !strings.HasPrefix(q, "SELECT") || !strings.Contains(q, "FROM `jobs`") || !strings.Contains(q, "ORDER BY") {
			continue
		}
		pages++
		steps, err := f.db.Plan(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range steps {
			if strings.Contains(step, "TEMP B-TREE") {
				t.Errorf("the page read sorts: %s\n%s", step, q)
			}
		}
	}
	if pages == 0 {
		t.Fatalf("no page read among the pass's statements:\n%s", strings.Join(stmts, "\n"))
	}
}

// A pass reads the jobs it may place, not those placed already and
// waiting for their node to start them: under load most pending jobs are,
// and a pass follows every submission.
func TestPassSkipsPlacedJobs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, dbtest.SQLiteURL(t))
	ctx := context.Background()
	f.addNode(t, "roomy", inv(64, 256*gib, nil), true, f.queue)
	job := func(k int) jobSpec {
		return jobSpec{queue: f.queue, created: t0.Add(time.Duration(k) * time.Second), services: []svc{{cpu: 1, mem: gib}}}
	}
	var first []jobSpec
	for k := range 20 {
		first = append(first, job(k))
	}
	f.addJobs(t, first)
	if placed, err := f.scheduler(f.db).ScheduleQueue(ctx, f.queue); err != nil || placed != 20 {
		t.Fatalf("placed %d: %v", placed, err)
	}
	f.addJobs(t, []jobSpec{job(20)})
	stmts := f.passStatements(t, 1)
	reads := 0
	for _, q := range stmts {
		if _, ids, ok := strings.Cut(q, "FROM services WHERE job_id IN ("); ok {
			reads++
			if n := strings.Count(ids, "?"); n != 1 {
				t.Errorf("the pass read the services of %d jobs, want only the one not placed:\n%s", n, q)
			}
		}
	}
	if reads != 1 {
		t.Fatalf("%d reads of services by job, want 1:\n%s", reads, strings.Join(stmts, "\n"))
	}
}

// passStatements runs a pass over f's queue, which must place want jobs,
// and returns the texts of the statements it ran, most recently used
// first (on SQLite; none on PostgreSQL).
func (f *world) passStatements(t *testing.T, want int) []string {
	t.Helper()
	since, err := f.db.Mark(f.sys)
	if err != nil {
		t.Fatal(err)
	}
	if placed, err := f.scheduler(f.db).ScheduleQueue(context.Background(), f.queue); err != nil || placed != want {
		t.Fatalf("placed %d, want %d: %v", placed, want, err)
	}
	stmts, err := since(f.sys)
	if err != nil {
		t.Fatal(err)
	}
	return stmts
}
