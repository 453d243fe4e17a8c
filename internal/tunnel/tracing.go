package tunnel

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/tracing"
	"github.com/levers9/levers9/internal/wire"
)

// sendTraced sends job j's Start as a tunnel.dispatch span in the job's
// trace (under its submit span), and puts that span's traceparent in the
// Start: the agent's spans hang from it, in the same trace, exported by
// the agent's own exporter. A resend (after a reconnect) is a span of its
// own, which is what happened.
func (s *session) sendTraced(ctx context.Context, j *ent.Job, msg wire.Start) error {
	ctx, span := s.srv.Tracer.Start(tracing.WithParent(ctx, j.TraceParent), "tunnel.dispatch",
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(tracing.JobID.String(j.ID), tracing.NodeID.String(s.nodeID), tracing.Attempt.Int(max(j.Attempt, 1))))
	defer span.End()
	msg.TraceParent = tracing.TraceParent(ctx)
	err := s.send(ctx, msg)
	tracing.Fail(span, err)
	return err
}
