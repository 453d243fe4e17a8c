package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/tenancy"
)

// MarkActive moves last_active_at of running jobs forward only; pending
// and ended jobs keep theirs.
func TestMarkActive(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		m := newMachine(t, url)
		ctx := context.Background()
		running := m.runningOn(t, tenancy.DefaultQueue, true)
		ended := m.runningOn(t, tenancy.DefaultQueue, true)
		pending := m.placed(t)
		if err := m.js.MarkActive(ctx, []string{ended}, m.start.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if _, err := m.js.Cancel(m.tn.AsAdmin(), ended); err != nil {
			t.Fatal(err)
		}
		lastActive := func(id string) string {
			t.Helper()
			j, err := m.tn.DB.Ent.Job.Get(fixture.Sys(), id)
			if err != nil {
				t.Fatal(err)
			}
			if j.LastActiveAt == nil {
				return "never"
			}
			return j.LastActiveAt.Sub(m.start).String()
		}
		all := []string{running, ended, pending}
		for _, step := range []struct {
			at   time.Duration
			want string // of the running job
		}{
			{10 * time.Minute, "10m0s"},
			{5 * time.Minute, "10m0s"}, // a late, older batch
			{10 * time.Minute, "10m0s"},
			{20 * time.Minute, "20m0s"},
		} {
			if err := m.js.MarkActive(ctx, all, m.start.Add(step.at)); err != nil {
				t.Fatal(err)
			}
			if got := lastActive(running); got != step.want {
				t.Fatalf("after activity at %v: running job last active at %s; want %s", step.at, got, step.want)
			}
			if got := lastActive(ended); got != "1m0s" {
				t.Fatalf("after activity at %v: ended job last active at %s; want 1m0s, before it ended", step.at, got)
			}
			if got := lastActive(pending); got != "never" {
				t.Fatalf("after activity at %v: pending job last active at %s; want never", step.at, got)
			}
		}
		if err := m.js.MarkActive(ctx, nil, m.start); err != nil {
			t.Fatalf("MarkActive of no jobs: %v", err)
		}
	})
}
