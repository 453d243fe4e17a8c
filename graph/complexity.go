package graph

import (
	"context"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/99designs/gqlgen/complexity"
	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/levers9/levers9/internal/fault"
)

// Limits bound the work and the answer of one GraphQL operation. Zero fields
// take the defaults.
type Limits struct {
	// Complexity is the highest cost an operation may have. A field costs 1
	// plus what it selects, times the rows it may return (see fieldCost).
	Complexity int
	// ResponseBytes is the largest answer; a larger one is replaced by an
	// error.
	ResponseBytes int
}

const (
	// DefaultComplexity fits the largest queries of the CLI and SDK (a
	// 1,000-row page of nodes or queues costs about 40,000; a 500-job page
	// with services about 64,000) and refuses a 1,000-row page whose rows
	// each open another page of more than about 30 rows.
	DefaultComplexity = 100_000
	// DefaultResponseBytes is twice the largest page a client needs: 1,000
	// log lines of the longest length (64 KiB).
	DefaultResponseBytes = 128 << 20
	// UnpagedRows is what a list without first/last (a job's services, a
	// queue's nodes) is assumed to hold when costing an operation.
	UnpagedRows = 10
)

func (l Limits) withDefaults() Limits {
	if l.Complexity <= 0 {
		l.Complexity = DefaultComplexity
	}
	if l.ResponseBytes <= 0 {
		l.ResponseBytes = DefaultResponseBytes
	}
	return l
}

// fieldCost is the cost of field def of type parent: 1 plus the cost of its
// selections once per row it may return. A connection (or any field taking
// first/last) returns its page size, which without first or last is
// MaxPageSize (fieldLimits gives it that page); a list of other objects
// UnpagedRows, except the edges of a connection, which its page counted.
func fieldCost(parent *ast.Definition, def *ast.FieldDefinition, rowsOf func(string) bool, child int, args map[string]any) int {
	rows := 1
	switch {
	case def.Arguments.ForName("first") != nil || def.Arguments.ForName("last") != nil:
		rows = max(pageArg(args["first"]), pageArg(args["last"]))
		if rows < 0 {
			rows = MaxPageSize
		}
	case parent.Fields.ForName("pageInfo") != nil:
		// edges of a connection
	case def.Type.Elem != nil && (rowsOf(def.Type.Elem.Name()) || parent.Name == "Query"):
		// A list of stored objects (a queue's nodes), or a list read
		// from the database; lists of values inside an object (its GPU
		// prices) come with it.
		rows = UnpagedRows
	}
	return satAdd(1, satMul(max(child, 0), max(rows, 1)))
}

// pageArg is the value of a first/last argument as the complexity walker
// sees it (a literal or a variable, not yet coerced), or -1 when absent or
// not a number. Out-of-range values are refused later by capPageSize; here
// they are only clamped so that they cannot make the cost overflow.
func pageArg(v any) int {
	var n int64
	switch v := v.(type) {
	case int:
		n = int64(v)
	case int64:
		n = v
	case float64:
		n = int64(v)
	case interface{ Int64() (int64, error) }: // json.Number
		i, err := v.Int64()
		if err != nil {
			return -1
		}
		n = i
	case string:
		i, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return -1
		}
		n = i
	default:
		return -1
	}
	return int(min(max(n, 0), MaxPageSize))
}

func satMul(a, b int) int {
	if a != 0 && b > maxInt/a {
		return maxInt
	}
	return a * b
}

func satAdd(a, b int) int {
	if a > maxInt-b {
		return maxInt
	}
	return a + b
}

const maxInt = int(^uint(0) >> 1)

// costedSchema prices fields by fieldCost for the complexity walker; the
// generated schema's own prices count every list as one row.
type costedSchema struct{ graphql.ExecutableSchema }

func (s costedSchema) Complexity(_ context.Context, typeName, field string, child int, args map[string]any) (int, bool) {
	schema := s.Schema()
	def := schema.Types[typeName]
	if def == nil {
		return 0, false
	}
	f := def.Fields.ForName(field)
	if f == nil {
		return 0, false
	}
	// Stored objects are the Relay nodes.
	stored := func(name string) bool {
		t := schema.Types[name]
		return t != nil && slices.Contains(t.Interfaces, "Node")
	}
	return fieldCost(def, f, stored, child, args), true
}

// costLimit refuses, before any resolver runs, operations that cost more
// than max.
type costLimit struct {
	max int
	es  graphql.ExecutableSchema
}

var _ interface {
	graphql.OperationContextMutator
	graphql.HandlerExtension
} = &costLimit{}

func (*costLimit) ExtensionName() string { return "CostLimit" }

func (c *costLimit) Validate(es graphql.ExecutableSchema) error {
	c.es = costedSchema{es}
	return nil
}

func (c *costLimit) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	if oc.Operation == nil {
		return nil
	}
	cost := complexity.Calculate(ctx, c.es, oc.Operation, oc.Variables)
	if cost > c.max {
		return &gqlerror.Error{
			Message: "query costs " + strconv.Itoa(cost) + ", more than the limit of " + strconv.Itoa(c.max) +
				": every row a list may return counts (first/last, or " + strconv.Itoa(MaxPageSize) +
				" without them); ask for smaller pages or fewer fields",
			Extensions: map[string]any{"code": fault.BadUserInput, "cost": cost, "limit": c.max},
		}
	}
	return nil
}

// responseBudget counts, while an operation runs, a lower bound of the bytes
// its answer will take, so that an answer too large to send stops being
// built early; the exact size is checked once it is built (capResponse).
type responseBudget struct {
	limit int64
	used  atomic.Int64
}

type budgetKey struct{}

// tooLarge is the one error an answer over the limit gets.
func tooLarge(limit int) *gqlerror.Error {
	return &gqlerror.Error{
		Message: "the answer would be larger than " + strconv.Itoa(limit) +
			" bytes; ask for smaller pages (first/last) or fewer fields",
		Extensions: map[string]any{"code": fault.BadUserInput, "limit": limit},
	}
}

// withBudget gives queries and mutations a response budget. Subscriptions
// send one small event at a time and get none.
func withBudget(ctx context.Context, limit int) context.Context {
	oc := graphql.GetOperationContext(ctx)
	if oc == nil || oc.Operation == nil || oc.Operation.Operation == ast.Subscription {
		return ctx
	}
	return context.WithValue(ctx, budgetKey{}, &responseBudget{limit: int64(limit)})
}

// overBudget reports whether the answer of ctx is already over its budget.
func overBudget(ctx context.Context) bool {
	b, _ := ctx.Value(budgetKey{}).(*responseBudget)
	return b != nil && b.used.Load() > b.limit
}

// spend charges the budget of ctx for the field just resolved: at least
// `"alias":` and a separator, plus the text of a string. It reports false
// once the answer is over budget.
func spend(ctx context.Context, fc *graphql.FieldContext, res any) bool {
	b, _ := ctx.Value(budgetKey{}).(*responseBudget)
	if b == nil {
		return true
	}
	n := int64(len(fc.Field.Alias) + 4)
	switch v := res.(type) {
	case string:
		n += int64(len(v))
	case *string:
		if v != nil {
			n += int64(len(*v))
		}
	}
	return b.used.Add(n) <= b.limit
}

// capResponse replaces an answer over limit bytes by one error; a client
// never gets a truncated answer.
func capResponse(limit int) graphql.ResponseMiddleware {
	return func(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
		resp := next(ctx)
		if resp == nil {
			return nil
		}
		b, _ := ctx.Value(budgetKey{}).(*responseBudget)
		over := b != nil && b.used.Load() > b.limit
		if !over {
			size := len(resp.Data)
			for _, e := range resp.Errors {
				// its message, code, location and path
				size += len(e.Message) + 128
			}
			over = size > limit
		}
		if over {
			return &graphql.Response{Errors: gqlerror.List{tooLarge(limit)}, Extensions: resp.Extensions}
		}
		return resp
	}
}
