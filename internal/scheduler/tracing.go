package scheduler

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/levers9/levers9/internal/scheduling"
	"github.com/levers9/levers9/internal/tracing"
)

// placements is what a committed pass placed, for its spans.
type placements struct {
	queueID     string
	placed      []scheduling.Placement
	traceParent map[string]string // job ID → the job's traceparent
}

// tracePlacements records a committed pass that placed jobs: one
// scheduler.pass span (a trace of its own: it serves many jobs) and, in
// each placed job's trace, a scheduler.place span under the job's submit
// span, linked to the pass. The spans are written after the commit, with
// the pass's times, so a rolled-back pass leaves no placement in a trace.
// Passes that place nothing record nothing: they run at every signal.
func (s *Service) tracePlacements(ctx context.Context, p placements, start time.Time) {
	if s.Tracer == nil || len(p.placed) == 0 {
		return
	}
	end := s.now()
	queue := tracing.QueueID.String(p.queueID)
	_, pass := s.Tracer.Start(ctx, "scheduler.pass", trace.WithNewRoot(), trace.WithTimestamp(start),
		trace.WithAttributes(queue, attribute.Int("levers9.scheduler.placed", len(p.placed))))
	passLink := trace.Link{SpanContext: pass.SpanContext()}
	for _, pl := range p.placed {
		tp := p.traceParent[pl.JobID]
		if tp == "" {
			continue // submitted while tracing was off: the job has no trace
		}
		_, span := s.Tracer.Start(tracing.WithParent(ctx, tp), "scheduler.place", trace.WithTimestamp(start),
			trace.WithLinks(passLink),
			trace.WithAttributes(tracing.JobID.String(pl.JobID), tracing.NodeID.String(pl.NodeID), queue))
		span.End(trace.WithTimestamp(end))
		pass.AddLink(trace.Link{SpanContext: span.SpanContext()})
	}
	pass.End(trace.WithTimestamp(end))
}
