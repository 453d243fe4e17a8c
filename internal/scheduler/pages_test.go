package scheduler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/dbtest"
)

// A burst larger than a page: a pass stops once the nodes have no room for
// the smallest waiting request, notes the rest as waiting for capacity,
// and a small job far down the queue is still backfilled while there is
// room for it.
func TestSchedulePages(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		f := newFixture(t, url)
		f.addNode(t, "n1", inv(4, 64*gib, nil), true, f.queue)
		var specs []jobSpec
		for i := range 300 {
			specs = append(specs, jobSpec{queue: f.queue, created: t0.Add(time.Duration(i) * time.Second), services: []svc{{cpu: 3, mem: gib}}})
		}
		// Far past the first pages, a job small enough for what is left.
		specs = append(specs, jobSpec{queue: f.queue, created: t0.Add(time.Hour), services: []svc{{cpu: 1, mem: gib}}})
		ids := f.addJobs(t, specs)
		s := f.scheduler(f.db)
		ctx := context.Background()
		if n, err := s.ScheduleQueue(ctx, f.queue); err != nil || n != 2 {
			t.Fatalf("first pass placed %d, %v; want the first job and the small one", n, err)
		}
		if got := f.placedOn(t, ids[0]); got != "n1" {
			t.Fatalf("first job on %q", got)
		}
		if got := f.placedOn(t, ids[300]); got != "n1" {
			t.Fatalf("the small job was not backfilled: %q", got)
		}
		// The nodes are full now: the next pass reads one page and stops;
		// jobs submitted meanwhile, past that page, learn why they wait.
		var more []jobSpec
		for i := range 100 {
			more = append(more, jobSpec{queue: f.queue, created: t0.Add(2*time.Hour + time.Duration(i)*time.Second), services: []svc{{cpu: 3, mem: gib}}})
		}
		late := f.addJobs(t, more)
		if n, err := s.ScheduleQueue(ctx, f.queue); err != nil || n != 0 {
			t.Fatalf("second pass placed %d, %v", n, err)
		}
		if r := f.reason(t, late[99]); !strings.Contains(r, "waiting for free capacity in queue") {
			t.Fatalf("a job past the pages has reason %q", r)
		}
		if r := f.reason(t, ids[1]); !strings.Contains(r, "waiting for 3 CPUs") {
			t.Fatalf("a job on the first page has reason %q, want the scheduler's own", r)
		}
		// Room again: the next job in order takes it.
		if err := f.db.Ent.Job.UpdateOneID(ids[0]).SetStatus(job.StatusComplete).Exec(f.sys); err != nil {
			t.Fatal(err)
		}
		if err := f.db.Ent.Service.Update().Where(service.JobID(ids[0])).SetStatus(service.StatusComplete).Exec(f.sys); err != nil {
			t.Fatal(err)
		}
		if n, err := s.ScheduleQueue(ctx, f.queue); err != nil || n != 1 {
			t.Fatalf("pass after a job ended placed %d, %v", n, err)
		}
		if got := f.placedOn(t, ids[1]); got != "n1" {
			t.Fatalf("the next job in order is on %q", got)
		}
	})
}

// Pages read ahead (PostgreSQL reads the next page while placing one):
// when the nodes fill up during a page, the page read ahead is dropped
// unplaced, and its jobs, like every later one, wait for free capacity;
// with room for all, every job of every page is placed exactly once.
func TestSchedulePagesReadAhead(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		f := newFixture(t, url)
		f.addNode(t, "n1", inv(100, 1024*gib, nil), true, f.queue)
		// 64 jobs on the first page, 256 on the second: the node fills up
		// on the second while the third is read.
		var specs []jobSpec
		for i := range 1000 {
			specs = append(specs, jobSpec{queue: f.queue, created: t0.Add(time.Duration(i) * time.Second), services: []svc{{cpu: 1, mem: gib}}})
		}
		ids := f.addJobs(t, specs)
		s := f.scheduler(f.db)
		ctx := context.Background()
		if n, err := s.ScheduleQueue(ctx, f.queue); err != nil || n != 100 {
			t.Fatalf("pass placed %d, %v; want the first 100", n, err)
		}
		if got := f.placedOn(t, ids[99]); got != "n1" {
			t.Fatalf("job 100 on %q", got)
		}
		if r := f.reason(t, ids[100]); !strings.HasPrefix(r, "waiting for ") || strings.Contains(r, "free capacity") {
			t.Fatalf("an unplaced job of the second page has reason %q, want the scheduler's own", r)
		}
		for _, i := range []int{320, 999} { // the page read ahead, and past it
			if r := f.reason(t, ids[i]); !strings.Contains(r, "waiting for free capacity in queue") {
				t.Fatalf("job %d, past the pages placed, has reason %q", i+1, r)
			}
		}

		// Room for every job: the pages read ahead are all placed.
		wide := f.addQueue(t, "wide")
		f.addNode(t, "n2", inv(2000, 4096*gib, nil), true, wide)
		for i := range specs {
			specs[i].queue = wide
		}
		f.addJobs(t, specs)
		if n, err := s.ScheduleQueue(ctx, wide); err != nil || n != len(specs) {
			t.Fatalf("pass with room placed %d, %v; want %d", n, err, len(specs))
		}
		var unplaced int
		err := f.db.SQL.QueryRowContext(ctx, `SELECT count(*) FROM services s JOIN jobs j ON j.id = s.job_id
			WHERE j.queue_id = $1 AND coalesce(s.node_id, '') = ''`, wide).Scan(&unplaced)
		if err != nil || unplaced != 0 {
			t.Fatalf("%d services of the wide queue unplaced, %v", unplaced, err)
		}
	})
}
