package jobs

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/service"
)

// TestJobTimeline: the job page's timeline has a row per service with its
// phases and their lengths, "so far" while the job goes on.
func TestJobTimeline(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	at := func(s int) *time.Time { x := t0.Add(time.Duration(s) * time.Second); return &x }
	j := &ent.Job{Name: "train <x>", CreatedAt: t0, Status: job.StatusRunning}
	j.Edges.Services = []*ent.Service{
		{Name: "web", Status: service.StatusRunning, DispatchedAt: at(4), StartedAt: at(10)},
		{Name: "db", Status: service.StatusPending, DispatchedAt: at(4)},
	}
	var b bytes.Buffer
	if err := JobTimeline(j, t0.Add(70*time.Second)).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		`id="job-timeline"`, "Timeline of train &lt;x&gt;", `data-label="web"`, `data-label="db"`,
		`data-phase="queued" data-length="4s"`, `data-phase="placed, pulling, starting" data-length="6s"`,
		`data-phase="running" data-length="1m00s so far"`, `data-length="1m06s so far"`,
		"1m10s from 10:00:00 UTC to 10:01:10 UTC", "the job goes on",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("timeline lacks %q:\n%s", want, out)
		}
	}
}
