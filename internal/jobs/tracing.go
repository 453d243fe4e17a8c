package jobs

import (
	"go.opentelemetry.io/otel/trace"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/tracing"
)

// endSubmitSpan ends a submission's span with what came of it. A refusal
// (bad input, no access, no tokens) is the caller's, not a failure of
// the server: it is an event with its code, and the span stays OK.
func endSubmitSpan(span trace.Span, j *ent.Job, err error) {
	if j != nil {
		span.SetAttributes(tracing.JobID.String(j.ID), tracing.QueueID.String(j.QueueID))
	}
	if fs := fault.Classify(err); len(fs) > 0 {
		span.AddEvent("refused", trace.WithAttributes(tracing.Code.String(string(fs[0].Code))))
	} else {
		tracing.Fail(span, err)
	}
	span.End()
}
