package functions_test

import (
	"context"
	"testing"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/functions"
)

// TestReconcileDue: nothing is due on a server without apps, a deployed
// app with a running call is, and once the app is stopped (its containers
// and calls with it), nothing is due again.
func TestReconcileDue(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		due := func(want bool, when string) {
			t.Helper()
			got, err := w.fn.ReconcileDue(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%s: due %v, want %v", when, got, want)
			}
		}
		due(false, "no apps")
		a := w.deploy(t, ctx, "vision", functions.FunctionSpec{Name: "embed"})
		f := a.Edges.Functions[0]
		due(true, "an app deployed")
		if _, err := w.fn.Call(ctx, f.ID, args("x")); err != nil {
			t.Fatal(err)
		}
		w.claim(t, w.runner(t, w.containers(t, f.ID)[0]), 1)
		due(true, "an app with a running call")
		if _, err := w.fn.StopApp(ctx, a.ID, ""); err != nil {
			t.Fatal(err)
		}
		// Stopping an app stops its containers and ends its calls.
		due(false, "the app stopped")
		for _, c := range w.containers(t, f.ID) {
			if err := w.fn.Jobs.MarkEnded(fixture.Sys(), c.JobID, job.StatusCancelled, "stopped", w.clock.Now()); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.fn.Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
		since, err := w.tn.DB.Mark(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		due(false, "the app stopped, its containers' jobs ended")
		// The check runs every few seconds, idle or not: it must find its
		// rows without reading every app, container or call ever made.
		stmts := fixture.NoHistoryReads(t, w.tn.DB, since)
		if w.tn.DB.Dialect == "sqlite" && len(stmts) != 3 {
			t.Errorf("the check ran %d statements, want its 3 reads", len(stmts))
		}
	})
}
