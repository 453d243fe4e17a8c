package jobs_test

import (
	"context"
	"testing"

	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/jobs/jobstate"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/viewer"
)

// A job submitted to a queue its last scheduling pass found backlogged
// says so from the start (the passes over a backlog note no job they do
// not read); elsewhere it waits to be scheduled.
func TestSubmitToBackloggedQueue(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		s := w.service(w.schedule)
		sys := viewer.SystemContext(context.Background())
		for _, backlogged := range []bool{true, false} {
			err := w.db.Ent.Queue.Update().Where(queue.Name(tenancy.DefaultQueue)).SetBacklogged(backlogged).Exec(sys)
			if err != nil {
				t.Fatal(err)
			}
			j, err := s.Submit(w.admin, twoServices())
			if err != nil {
				t.Fatal(err)
			}
			want := jobstate.ReasonWaiting
			if backlogged {
				want = jobstate.ReasonBacklogged(tenancy.DefaultQueue)
			}
			if j.StatusReason != want {
				t.Errorf("backlogged=%t: reason %q, want %q", backlogged, j.StatusReason, want)
			}
		}
	})
}
