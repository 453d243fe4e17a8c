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
