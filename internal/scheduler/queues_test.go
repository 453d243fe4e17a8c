package scheduler_test

import (
	"context"
	"slices"
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
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
