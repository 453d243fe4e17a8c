package scheduler_test

import (
	"context"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/internal/dbtest"
)

// TestDrainingNodeTakesNoNewJobs: a draining node gets no new jobs, even
// when it is the only one with room; the jobs it runs go on; waiting jobs
// say that a node is draining; undrained, it takes jobs again.
func TestDrainingNodeTakesNoNewJobs(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		f := newFixture(t, url)
		big := f.addNode(t, "big", inv(64, 64*gib, nil), true, f.queue)
		f.addNode(t, "small", inv(2, 2*gib, nil), true, f.queue)
		running := f.addRunning(t, f.queue, big, svc{cpu: 1, mem: gib}, "")
		if err := f.db.Ent.Node.UpdateOneID(big).SetDrain(true).Exec(f.sys); err != nil {
			t.Fatal(err)
		}
		ids := f.addJobs(t, []jobSpec{cpuJob(f.queue, 8, gib), cpuJob(f.queue, 1, gib)})
		large, fits := ids[0], ids[1]
		s := f.scheduler(f.db)
		if _, err := s.ScheduleQueue(context.Background(), f.queue); err != nil {
			t.Fatal(err)
		}
		if got := f.placedOn(t, large); got != "" {
			t.Fatalf("a job for 8 CPUs went to draining node %s", got)
		}
		if r := f.reason(t, large); !strings.HasSuffix(r, "; node big is draining") {
			t.Fatalf("waiting job's reason %q does not say node big is draining", r)
		}
		if got := f.placedOn(t, fits); got != "small" {
			t.Fatalf("a job for 1 CPU is on %q, want small", got)
		}
		if st := f.db.Ent.Job.GetX(f.sys, running).Status; st != job.StatusRunning {
			t.Fatalf("the job running on the draining node is %s", st)
		}

		// Every node draining: the queue has nodes, but none takes jobs.
		if err := f.db.Ent.Node.Update().Where(node.Name("small")).SetDrain(true).Exec(f.sys); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ScheduleQueue(context.Background(), f.queue); err != nil {
			t.Fatal(err)
		}
		if r, want := f.reason(t, large), "queue default has no online nodes taking new jobs: nodes big, small are draining"; r != want {
			t.Fatalf("reason %q, want %q", r, want)
		}

		if err := f.db.Ent.Node.UpdateOneID(big).SetDrain(false).Exec(f.sys); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ScheduleQueue(context.Background(), f.queue); err != nil {
			t.Fatal(err)
		}
		if got := f.placedOn(t, large); got != "big" {
			t.Fatalf("after undrain the 8-CPU job is on %q, want big", got)
		}
	})
}
