package graph

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
)

// operationTracing gives each query and mutation a span, the root of
// what it causes: a submitJob's span is the parent of the job's submit
// span, and so of the job's whole trace (scheduling, dispatch, the
// agent's start).
//
// A caller's W3C traceparent header is honoured for signed-in callers
// only: their client's trace then continues into the server. An
// anonymous request always starts a new trace, so that nobody without a
// token can hang spans (sign-in attempts, say) into a trace they name.
// Either way the server samples every trace itself (tracing.New): a
// caller's "not sampled" flag cannot hide its operations. Subscriptions
// get no span: they last as long as a client follows, hours maybe.
type operationTracing struct{ tracer trace.Tracer }

var (
	_ graphql.HandlerExtension     = operationTracing{}
	_ graphql.OperationInterceptor = operationTracing{}
)

func (operationTracing) ExtensionName() string                   { return "OperationTracing" }
func (operationTracing) Validate(graphql.ExecutableSchema) error { return nil }

// maxSpanFields bounds the root fields a span's name lists.
const maxSpanFields = 3

// InterceptOperation runs the operation inside its span. The span ends
// with the operation's answer, which gqlgen computes when the returned
// handler is called.
func (t operationTracing) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	if t.tracer == nil {
		return next(ctx) // tracing off: nothing more than this test
	}
	oc := graphql.GetOperationContext(ctx)
	if oc.Operation == nil || oc.Operation.Operation == ast.Subscription {
		return next(ctx)
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		attribute.String("graphql.operation.type", string(oc.Operation.Operation)),
		attribute.String("graphql.operation.name", clipName(oc.OperationName)),
	)}
	if viewer.FromContext(ctx) != nil {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(oc.Headers))
	} else {
		opts = append(opts, trace.WithNewRoot())
	}
	ctx, span := t.tracer.Start(ctx, spanName(oc), opts...)
	h := next(ctx)
	ended := false
	return func(ctx context.Context) *graphql.Response {
		resp := h(ctx)
		if !ended {
			ended = true
			endOperationSpan(span, resp)
		}
		return resp
	}
}

// endOperationSpan records the answer's error codes. Only an internal
// error fails the span: a refusal (bad input, forbidden) is the
// caller's, and the server did its job.
func endOperationSpan(span trace.Span, resp *graphql.Response) {
	if resp != nil && len(resp.Errors) > 0 {
		var errCodes []string
		for _, e := range resp.Errors {
			c := fmt.Sprint(e.Extensions["code"])
			if !slices.Contains(errCodes, c) {
				errCodes = append(errCodes, c)
			}
		}
		span.SetAttributes(attribute.StringSlice("levers9.error.codes", errCodes))
		if slices.Contains(errCodes, string(fault.Internal)) {
			span.SetStatus(codes.Error, "internal error")
		}
	}
	span.End()
}

// spanName is "graphql mutation submitJob": the operation type and its
// root fields (rootFields), at most maxSpanFields of them.
func spanName(oc *graphql.OperationContext) string {
	fields := rootFields(oc, maxSpanFields)
	switch {
	case len(fields) == 0:
		fields = []string{"__typename"}
	case len(fields) > maxSpanFields:
		fields = append(fields[:maxSpanFields], "…")
	}
	return "graphql " + string(oc.Operation.Operation) + " " + strings.Join(fields, ",")
}

// clipName bounds the client's operation name kept on the span.
func clipName(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	for i := max; i > 0; i-- {
		if !isContinuation(s[i]) {
			return s[:i]
		}
	}
	return ""
}

func isContinuation(b byte) bool { return b&0xC0 == 0x80 }
