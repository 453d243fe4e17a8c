package jobs_test

import (
	"context"
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/tracing"
	"github.com/levers9/levers9/internal/viewer"
)

// With tracing, a job keeps the traceparent of its jobs.submit span (the
// root its trace hangs from), and the span names the job; a refused
// submission is an event on an OK span, not a failure. Without, the job
// keeps no traceparent.
func TestSubmitTraceParent(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		w := newWorld(t, url)
		stored := func(id string) string {
			t.Helper()
			j, err := w.db.Ent.Job.Query().Where(job.ID(id)).Only(viewer.SystemContext(context.Background()))
			if err != nil {
				t.Fatal(err)
			}
			return j.TraceParent
		}

		off := w.service(w.schedule)
		j, err := off.Submit(w.admin, twoServices())
		if err != nil {
			t.Fatal(err)
		}
		if tp := stored(j.ID); tp != "" {
			t.Fatalf("tracing off, the job keeps traceparent %q", tp)
		}

		exp := tracetest.NewInMemoryExporter()
		p := tracing.NewSynced(exp, tracing.Config{Service: tracing.ServerService})
		t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
		on := w.service(w.schedule)
		on.Tracer = p.Tracer()
		j, err = on.Submit(w.admin, twoServices())
		if err != nil {
			t.Fatal(err)
		}
		spans := exp.GetSpans()
		if len(spans) != 1 || spans[0].Name != "jobs.submit" {
			t.Fatalf("spans %+v, want one jobs.submit", spans)
		}
		sc := spans[0].SpanContext
		if want := fmt.Sprintf("00-%s-%s-01", sc.TraceID(), sc.SpanID()); stored(j.ID) != want {
			t.Fatalf("stored traceparent %q, want the submit span's %q", stored(j.ID), want)
		}
		if !hasJobID(spans[0], j.ID) {
			t.Fatalf("jobs.submit attributes %v lack the job ID", spans[0].Attributes)
		}

		exp.Reset()
		bad := twoServices()
		bad.Queue = "no-such-queue"
		if _, err := on.Submit(w.admin, bad); err == nil {
			t.Fatal("submitted to a queue that does not exist")
		}
		spans = exp.GetSpans()
		if len(spans) != 1 || len(spans[0].Events) != 1 || spans[0].Events[0].Name != "refused" || spans[0].Status.Code == codes.Error {
			t.Fatalf("refused submission: spans %+v, want one OK span with a refused event", spans)
		}
	})
}

func hasJobID(s tracetest.SpanStub, id string) bool {
	for _, a := range s.Attributes {
		if a.Key == tracing.JobID && a.Value.AsString() == id {
			return true
		}
	}
	return false
}
