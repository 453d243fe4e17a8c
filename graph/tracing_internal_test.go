package graph

import (
	"context"
	"testing"

	"github.com/99designs/gqlgen/graphql"
)

// Tracing off, an operation costs the interceptor nothing: no span, no
// allocation, not even a look at the operation.
func TestTracingOffAllocatesNothing(t *testing.T) {
	ot := operationTracing{}
	next := func(context.Context) graphql.ResponseHandler { return nil }
	ctx := context.Background() // no operation context: reading one would panic
	if n := testing.AllocsPerRun(100, func() { ot.InterceptOperation(ctx, next) }); n != 0 {
		t.Fatalf("%v allocations per operation with tracing off", n)
	}
}
