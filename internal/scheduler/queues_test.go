package scheduler_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
)

func TestNodeAndPendingQueues(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		f := newFixture(t, url)
		ctx := context.Background()
		other, idle := f.addQueue(t, "other"), f.addQueue(t, "idle")
		n := f.addNode(t, "n1", inv(8, 16*gib, nil), true, f.queue, other)
		f.addJobs(t, []jobSpec{cpuJob(f.queue, 2, gib), cpuJob(other, 2, gib)})
		s := f.scheduler(f.db)
		got, err := s.NodeQueues(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		want := []string{f.queue, other}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("NodeQueues = %v, want %v", got, want)
		}
		pending, err := s.PendingQueues(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(pending) != 2 || slices.Contains(pending, idle) {
			t.Fatalf("PendingQueues = %v, want default and other", pending)
		}
		placed, err := s.ScheduleNodeQueues(ctx, n)
		if err != nil || placed != 2 {
			t.Fatalf("ScheduleNodeQueues = %d, %v; want both jobs placed", placed, err)
		}
	})
}

// A pass over a queue without pending jobs to place reads the queue and
// nothing else: a job's end asks for one, and it usually finds the jobs
// submitted since placed already (pending until their node starts them),
// so reading the queue's nodes, their services and storages would be for
// nothing. That read finds its pending jobs without reading the node's
// history (database.HistoryReads).
func TestEmptyPassReadsOnlyTheQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t, dbtest.SQLiteURL(t))
	n := f.addNode(t, "n1", inv(8, 8192, nil), true, f.queue)
	f.tn.AddHistory(t, n, 300)
	s := f.scheduler(f.db)
	run := func() []string {
		t.Helper()
		since, err := f.db.Mark(f.sys)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ScheduleQueue(f.sys, f.queue); err != nil {
			t.Fatal(err)
		}
		return fixture.NoHistoryReads(t, f.db, since)
	}
	onlyQueue := func(when string, stmts []string) {
		t.Helper()
		if len(stmts) != 1 || !strings.Contains(stmts[0], "FROM `queues`") {
			t.Errorf("%s: the pass ran %d statements, want the queue's read alone: %q", when, len(stmts), stmts)
		}
	}
	onlyQueue("no pending job", run())
	f.addJobs(t, []jobSpec{{queue: f.queue, created: t0, services: []svc{{cpu: 1, mem: 64}}}})
	if stmts := run(); !slices.ContainsFunc(stmts, func(q string) bool { return strings.Contains(q, "FROM `nodes`") }) {
		t.Errorf("a pass with a job to place read no nodes: the check would prove little; %q", stmts)
	}
	onlyQueue("the pending job placed", run())
}
