package jobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/jobs"
)

// What the reports of a two-service job write, row by row: nothing of
// the job while one service runs; then the job runs, billed from its
// first service's start at its queue's rates (a start fee, 6 tokens a
// minute for its one CPU); one
// failure ends the job and with it the service still running, and bills
// its minutes.
func TestReportsHistory(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		m := newMachine(t, url)
		ctx := context.Background()
		id := m.placedServices(t, "a", "b")
		ref := func(svc string) jobs.ServiceRef {
			return jobs.ServiceRef{JobID: id, Service: svc, NodeID: m.node, Attempt: 1}
		}
		at := func(minutes int) time.Time { return m.start.Add(time.Duration(minutes) * time.Minute) }
		code3 := 3
		for _, step := range []struct {
			apply func() error
			want  string
		}{
			{func() error { return m.js.ServiceRunning(ctx, ref("a"), nil, at(0)) }, `
job JOB PENDING "waiting to be scheduled" attempt=1 started=<nil> finished=<nil> metered=0 closed=false 
service a RUNNING "" node=NODE sent=2026-03-01 13:00:00 +0000 UTC started=2026-03-01 13:00:00 +0000 UTC finished=<nil> exit=<nil> 
service b PENDING "" node=NODE sent=2026-03-01 13:00:00 +0000 UTC started=<nil> finished=<nil> exit=<nil> 
event PENDING 
`},
			{func() error { return m.js.ServiceRunning(ctx, ref("b"), nil, at(1)) }, `
job JOB RUNNING "running" attempt=1 started=2026-03-01 13:00:00 +0000 UTC finished=<nil> metered=0 closed=false 
service a RUNNING "" node=NODE sent=2026-03-01 13:00:00 +0000 UTC started=2026-03-01 13:00:00 +0000 UTC finished=<nil> exit=<nil> 
service b RUNNING "" node=NODE sent=2026-03-01 13:00:00 +0000 UTC started=2026-03-01 13:01:00 +0000 UTC finished=<nil> exit=<nil> 
event PENDING 
event RUNNING "running" 2026-03-01 13:01:00 +0000 UTC
charge start:JOB:1 1 start fee`},
			{func() error {
				_, err := m.js.ServiceEnded(ctx, ref("a"), jobs.ServiceEnd{ExitCode: &code3, Failed: true, Reason: "exit 3"}, at(3))
				return err
			}, `
job JOB ERROR "service a failed: exit 3" attempt=1 started=2026-03-01 13:00:00 +0000 UTC finished=2026-03-01 13:03:00 +0000 UTC metered=3 closed=true 
service a ERROR "exit 3" node=NODE sent=2026-03-01 13:00:00 +0000 UTC started=2026-03-01 13:00:00 +0000 UTC finished=2026-03-01 13:03:00 +0000 UTC  
service b ERROR "service a failed: exit 3" node=NODE sent=2026-03-01 13:00:00 +0000 UTC started=2026-03-01 13:01:00 +0000 UTC finished=2026-03-01 13:03:00 +0000 UTC exit=<nil> 
event PENDING 
event RUNNING "running" 2026-03-01 13:01:00 +0000 UTC
event ERROR "service a failed: exit 3" 2026-03-01 13:03:00 +0000 UTC
charge compute:JOB:1:0 6 
charge compute:JOB:1:1 6 
charge compute:JOB:1:2 6 
charge start:JOB:1 1 start fee`},
		} {
			if err := step.apply(); err != nil {
				t.Fatal(err)
			}
			got := strings.ReplaceAll(m.history(t, id), m.node, "NODE")
			if want := strings.TrimSpace(step.want); strings.TrimSpace(got) != want {
				t.Fatalf("got:\n%s\nwant:\n%s", got, want)
			}
		}
	})
}
