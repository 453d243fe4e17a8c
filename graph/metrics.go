package graph

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"github.com/levers9/levers9/internal/metrics"
)

// operationMetrics counts GraphQL operations (levers9_graphql_operations_total)
// and times them to their first answer (levers9_graphql_operation_seconds).
//
// The operation label is the operation's root field, never the client's
// operation name: that is free text, and a caller could make a series per
// request. A validated operation's root fields are the schema's, but any
// mix of them could still be sent, so an operation of several root fields
// is "multiple"; one that did not parse or validate is "invalid".
type operationMetrics struct{}

var (
	_ graphql.HandlerExtension     = operationMetrics{}
	_ graphql.OperationInterceptor = operationMetrics{}
	_ graphql.ResponseInterceptor  = operationMetrics{}
)

func (operationMetrics) ExtensionName() string                   { return "OperationMetrics" }
func (operationMetrics) Validate(graphql.ExecutableSchema) error { return nil }

// recordKey holds the operation's once: a subscription answers many times
// but is one operation.
type recordKey struct{}

// InterceptOperation marks the operation so that its first answer only is
// counted.
func (operationMetrics) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	return next(context.WithValue(ctx, recordKey{}, new(sync.Once)))
}

// InterceptResponse counts the first answer of each operation, and the
// answers to operations that never ran (parse and validation errors, which
// reach no InterceptOperation).
func (operationMetrics) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	if !graphql.HasOperationContext(ctx) {
		return resp
	}
	record := func() { observeOperation(graphql.GetOperationContext(ctx), resp) }
	if once, ok := ctx.Value(recordKey{}).(*sync.Once); ok {
		once.Do(record)
	} else {
		record()
	}
	return resp
}

func observeOperation(oc *graphql.OperationContext, resp *graphql.Response) {
	name, typ := operationLabels(oc)
	code := "OK"
	if resp != nil && len(resp.Errors) > 0 {
		// Codes are the server's own (fault codes, gqlgen's parse and
		// validation codes), never the caller's text.
		code = "UNKNOWN"
		if c := fmt.Sprint(resp.Errors[0].Extensions["code"]); c != "" && c != "<nil>" && len(c) <= 64 {
			code = c
		}
	} else if resp == nil {
		code = "NONE" // a subscription that ended before answering
	}
	took := 0.0
	if start := oc.Stats.OperationStart; !start.IsZero() {
		took = time.Since(start).Seconds()
	}
	metrics.GraphQLOperations.WithLabelValues(name, typ, code).Inc()
	metrics.GraphQLDuration.WithLabelValues(name, typ).Observe(took)
}

// operationLabels are the operation and type labels of oc's operation.
func operationLabels(oc *graphql.OperationContext) (name, typ string) {
	if oc.Operation == nil {
		return "invalid", "unknown"
	}
	fields := rootFields(oc, 1)
	switch len(fields) {
	case 0:
		name = "__typename"
	case 1:
		name = fields[0]
	default:
		name = "multiple"
	}
	return name, string(oc.Operation.Operation)
}
