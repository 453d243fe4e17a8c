package scheduler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"entgo.io/ent/dialect"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/jobs/jobstate"
	"github.com/levers9/levers9/internal/scheduler"
)

// A pass that stops early (no node has room for the smallest request
// waiting) marks its queue backlogged and notes the jobs it did not read.
// While the mark stays, passes write no job they did not read (jobs
// submitted meanwhile carry the note from submission) and take the
// smallest request off the two partial indexes, never reading every
// waiting job; a pass that reads every job clears the mark.
func TestBackloggedQueue(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		f := newFixture(t, url)
		ctx := context.Background()
		s := f.scheduler(f.db)
		q, err := f.db.Ent.Queue.Get(f.sys, f.queue)
		if err != nil {
			t.Fatal(err)
		}
		f.addNode(t, "small", inv(4, 16*gib, nil), true, f.queue)
		large := func(n int, from time.Time) []jobSpec {
			specs := make([]jobSpec, n)
			for k := range specs {
				specs[k] = jobSpec{queue: f.queue, created: from.Add(time.Duration(k) * time.Second), services: []svc{{cpu: 8, mem: 32 * gib}, {cpu: 2, mem: 64 * gib}}}
			}
			return specs
		}
		backlogged := func() bool {
			t.Helper()
			q, err := f.db.Ent.Queue.Get(f.sys, f.queue)
			if err != nil {
				t.Fatal(err)
			}
			return q.Backlogged
		}
		pass := func(want int) {
			t.Helper()
			if placed, err := s.ScheduleQueue(ctx, f.queue); err != nil || placed != want {
				t.Fatalf("placed %d, want %d: %v", placed, want, err)
			}
		}
		first := f.addJobs(t, large(100, t0))
		if backlogged() {
			t.Fatal("a queue no pass read is backlogged")
		}
		pass(0)
		if !backlogged() {
			t.Fatal("a pass that stopped early left its queue unmarked")
		}
		if r := f.reason(t, first[99]); r != jobstate.ReasonBacklogged(q.Name) {
			t.Fatalf("a job past the page has reason %q", r)
		}
		late := f.addJobs(t, large(10, t0.Add(time.Hour)))
		if r := f.reason(t, late[9]); r != jobstate.ReasonBacklogged(q.Name) {
			t.Fatalf("a job submitted to a backlogged queue has reason %q", r)
		}
		since, err := f.db.Mark(f.sys)
		if err != nil {
			t.Fatal(err)
		}
		pass(0)
		if !backlogged() {
			t.Fatal("a pass that stopped early again cleared the mark")
		}
		stmts, err := since(f.sys)
		if err != nil {
			t.Fatal(err)
		}
		smallest := 0
		for _, stmt := range stmts { // SQLite's only: see Mark
			if strings.HasPrefix(stmt, "UPDATE") && strings.Contains(stmt, "jobs") {
				t.Errorf("a pass over a backlogged queue wrote jobs whose reasons stand:\n%s", stmt)
			}
			if !strings.Contains(stmt, "smallest_cpu >= 0") {
				continue
			}
			smallest++
			steps, err := f.db.Plan(ctx, stmt)
			if err != nil {
				t.Fatal(err)
			}
			plan := strings.Join(steps, "\n")
			for _, index := range []string{"job_queue_id_smallest_cpu", "job_queue_id_smallest_memory_mib"} {
				if !strings.Contains(plan, "USING COVERING INDEX "+index+" (queue_id=?") {
					t.Errorf("the smallest request is not read off %s:\n%s", index, plan)
				}
			}
		}
		if f.db.Dialect == dialect.SQLite && smallest != 1 {
			t.Errorf("the pass asked for the smallest request %d times, want once:\n%s", smallest, strings.Join(stmts, "\n"))
		}
		// Room for every job: the pass reads them all and clears the mark.
		f.addNode(t, "large", inv(2000, 20000*gib, nil), true, f.queue)
		pass(110)
		if backlogged() {
			t.Fatal("a pass that read every job left its queue backlogged")
		}
	})
}

// On PostgreSQL, with the statistics of jobs just submitted (as in a
// burst), the smallest request is the first entry of each partial index
// (a limit over an index scan, never an aggregate over every waiting
// job), and the scheduler's page is read off the queue's index in its
// order, never off the partial indexes (whose second condition keeps it
// away: without it the planner took one and sorted every waiting job).
func TestSmallestRequestPlans(t *testing.T) {
	t.Parallel()
	f := newFixture(t, dbtest.PostgresURL(t))
	specs := make([]jobSpec, 500)
	for k := range specs {
		specs[k] = jobSpec{queue: f.queue, created: t0.Add(time.Duration(k) * time.Second), services: []svc{{cpu: 8, mem: 32 * gib}}}
	}
	f.addJobs(t, specs)
	explain := func(query string, args ...any) string {
		t.Helper()
		rows, err := f.db.SQL.Query("EXPLAIN "+query, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		return strings.Join(plan, "\n")
	}
	// The values written in, as the pass's custom plans know them.
	plan := explain(strings.ReplaceAll(scheduler.SmallestRequestSQL, "$1", "'"+f.queue+"'"))
	for _, index := range []string{"job_queue_id_smallest_cpu", "job_queue_id_smallest_memory_mib"} {
		if !strings.Contains(plan, "Index Only Scan using "+index) {
			t.Errorf("the smallest request is not read off %s:\n%s", index, plan)
		}
	}
	if strings.Contains(plan, "Aggregate") || strings.Count(plan, "Limit") != 2 {
		t.Errorf("the smallest request reads more than each index's first entry:\n%s", plan)
	}
	page := explain(`SELECT id FROM jobs WHERE queue_id = '` + f.queue + `' AND status = 'PENDING' ORDER BY priority DESC, created_at, id LIMIT 64`)
	if strings.Contains(page, "smallest") || strings.Contains(page, "Sort") {
		t.Errorf("the page is not read off the queue's index in its order:\n%s", page)
	}
}
