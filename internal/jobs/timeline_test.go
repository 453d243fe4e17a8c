package jobs_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/jobs"
)

// TestTimelineOf: each service's phases come from the job's submission and
// the service's dispatch, start and end times, open while they go on.
func TestTimelineOf(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	at := func(s int) *time.Time { x := t0.Add(time.Duration(s) * time.Second); return &x }
	now := t0.Add(100 * time.Second)
	for _, tc := range []struct {
		name string
		svc  ent.Service
		end  *time.Time // the job's
		want string
	}{
		{"waiting", ent.Service{Status: service.StatusPending}, nil, "queued 0-open"},
		{"starting", ent.Service{Status: service.StatusPending, DispatchedAt: at(5)}, nil,
			"queued 0-5 | placed, pulling, starting 5-open"},
		{"running", ent.Service{Status: service.StatusRunning, DispatchedAt: at(5), StartedAt: at(20)}, nil,
			"queued 0-5 | placed, pulling, starting 5-20 | running 20-open"},
		{"complete", ent.Service{Status: service.StatusComplete, DispatchedAt: at(5), StartedAt: at(20), FinishedAt: at(80)}, at(80),
			"queued 0-5 | placed, pulling, starting 5-20 | running 20-80 | ended 80-80"},
		{"cancelled in the queue", ent.Service{Status: service.StatusCancelled, FinishedAt: at(30)}, at(30),
			"queued 0-30 | ended 30-30"},
		{"failed while starting", ent.Service{Status: service.StatusError, DispatchedAt: at(5), FinishedAt: at(9)}, at(9),
			"queued 0-5 | placed, pulling, starting 5-9 | ended 9-9"},
		{"started before dispatch was timed", ent.Service{Status: service.StatusRunning, StartedAt: at(7)}, nil,
			"queued 0-7 | running 7-open"},
		{"ended without its own end time", ent.Service{Status: service.StatusComplete, StartedAt: at(7)}, at(50),
			"queued 0-7 | running 7-50 | ended 50-50"},
	} {
		svc := tc.svc
		svc.Name = "main"
		j := &ent.Job{CreatedAt: t0, FinishedAt: tc.end, Status: job.StatusRunning}
		tl := jobs.TimelineOf(j, []*ent.Service{&svc}, now)
		var got []string
		for _, s := range tl.Services[0].Spans {
			to := "open"
			if !s.Open {
				to = fmt.Sprint(s.To.Sub(t0).Seconds())
			}
			got = append(got, fmt.Sprintf("%s %v-%s", s.Phase, s.From.Sub(t0).Seconds(), to))
		}
		if g := strings.Join(got, " | "); g != tc.want {
			t.Errorf("%s: %s\nwant %s", tc.name, g, tc.want)
		}
		wantEnd := now
		if tc.end != nil {
			wantEnd = *tc.end
		}
		if !tl.Start.Equal(t0) || !tl.End.Equal(wantEnd) {
			t.Errorf("%s: from %v to %v", tc.name, tl.Start, tl.End)
		}
	}
}
