package agent

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/levers9/levers9/internal/wire"
)

// The agent shares only the wire package with the server, so it spells
// the span attributes the server's tracing package names.
const (
	attrJobID   = attribute.Key("levers9.job.id")
	attrAttempt = attribute.Key("levers9.job.attempt")
	attrRuntime = attribute.Key("levers9.runtime")
)

// noSpan records nothing; what span and startSpan return with tracing off.
var noSpan = trace.SpanFromContext(context.Background())

// startSpan starts agent.start for Start m: under the server's
// tunnel.dispatch span when m carries its traceparent (one trace per job,
// across processes), else a trace of the agent's own. It ends when the
// runtime started the job or gave up.
func (a *Agent) startSpan(ctx context.Context, m wire.Start, attempt int) (context.Context, trace.Span) {
	if a.cfg.Tracer == nil {
		return ctx, noSpan
	}
	if m.TraceParent != "" {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": m.TraceParent})
	}
	return a.cfg.Tracer.Start(ctx, "agent.start", trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attrJobID.String(m.JobID), attrAttempt.Int(attempt), attrRuntime.String(a.cfg.Runtime.Name())))
}

// span starts a step of a job's start (mounts, code, runtime) under the
// span in ctx; nothing with tracing off.
func (a *Agent) span(ctx context.Context, name string) (context.Context, trace.Span) {
	if a.cfg.Tracer == nil {
		return ctx, noSpan
	}
	return a.cfg.Tracer.Start(ctx, name)
}

// endSpan ends a step, failed when err is set.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// failSpan marks the span of ctx (agent.start) failed: the job could not
// start.
func failSpan(ctx context.Context, reason string) {
	trace.SpanFromContext(ctx).SetStatus(codes.Error, reason)
}
