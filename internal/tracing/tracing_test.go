package tracing_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/levers9/levers9/internal/tracing"
	"github.com/levers9/levers9/internal/wire"
)

func TestParseEndpoint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
	}{
		{"http://collector:4318", "http://collector:4318/v1/traces"},
		{"http://collector:4318/", "http://collector:4318/v1/traces"},
		{"https://otel.example.com/custom/traces", "https://otel.example.com/custom/traces"},
		{"collector:4318", ""},
		{"grpc://collector:4317", ""},
		{"http://", ""},
		{"http://user:secret@collector:4318", ""},
		{"http://collector:4318/?token=x", ""},
		{"", ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := tracing.ParseEndpoint(tc.in)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("ParseEndpoint(%q) = %q, want an error", tc.in, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseEndpoint(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

// Off (no endpoint), the tracer is nil: the services skip spans.
func TestOffHasNoTracer(t *testing.T) {
	t.Parallel()
	p, err := tracing.New(tracing.Config{Service: tracing.ServerService})
	if err != nil {
		t.Fatal(err)
	}
	if p.Tracer() != nil {
		t.Fatal("no endpoint, yet a tracer")
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := tracing.New(tracing.Config{Endpoint: "ftp://x"}); err == nil {
		t.Fatal("a bad endpoint was taken")
	}
}

// A span's traceparent is one the wire accepts, and a span started under
// it (another process's) is its child in the same trace. Without a span
// there is none, and garbage gives no parent.
func TestTraceParentRoundTrip(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	p := tracing.NewSynced(exp, tracing.Config{Service: tracing.ServerService, Version: "v1"})
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	if tp := tracing.TraceParent(context.Background()); tp != "" {
		t.Fatalf("no span, traceparent %q", tp)
	}
	ctx, parent := p.Tracer().Start(context.Background(), "parent")
	tp := tracing.TraceParent(ctx)
	if err := wire.CheckTraceParent(tp); err != nil {
		t.Fatalf("traceparent %q: %v", tp, err)
	}
	parent.End()
	_, child := p.Tracer().Start(tracing.WithParent(context.Background(), tp), "child")
	child.End()
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	c := spans[1]
	if c.SpanContext.TraceID() != parent.SpanContext().TraceID() || c.Parent.SpanID() != parent.SpanContext().SpanID() || !c.Parent.IsRemote() {
		t.Fatalf("child %v under %v, want under %v", c.SpanContext, c.Parent, parent.SpanContext())
	}
	if v, _ := c.Resource.Set().Value("service.name"); v.AsString() != tracing.ServerService {
		t.Fatalf("service.name %q", v.AsString())
	}
	if got := trace.SpanContextFromContext(tracing.WithParent(context.Background(), "00-zz")); got.IsValid() {
		t.Fatalf("garbage traceparent gave parent %v", got)
	}
}

// A client's "not sampled" flag does not turn tracing off for its work.
func TestClientCannotUnsample(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	p := tracing.NewSynced(exp, tracing.Config{Service: tracing.ServerService})
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	ctx := tracing.WithParent(context.Background(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
	_, span := p.Tracer().Start(ctx, "op")
	span.End()
	if n := len(exp.GetSpans()); n != 1 {
		t.Fatalf("%d spans recorded under an unsampled parent, want 1", n)
	}
}
