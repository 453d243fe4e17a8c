package graph

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/levers9/levers9/graph/generated"
)

// TestEveryListIsCosted walks the whole schema: every field that returns a
// connection takes first/last and costs its selections once per row of its
// page; every other list of stored objects, and every list Query returns,
// costs them UnpagedRows times; edges (already counted by their connection),
// lists of values inside an object and single objects once. A new
// connection field without first/last, or a cost rule that stops
// multiplying, fails here (#12.1).
func TestEveryListIsCosted(t *testing.T) {
	t.Parallel()
	es := costedSchema{generated.NewExecutableSchema(generated.Config{})}
	schema := es.Schema()
	const child = 10
	cost := func(typ, field string, args map[string]any) int {
		c, ok := es.Complexity(context.Background(), typ, field, child, args)
		if !ok {
			t.Fatalf("%s.%s has no cost", typ, field)
		}
		return c
	}
	connections, lists := 0, 0
	for name, def := range schema.Types {
		if def.Kind != ast.Object || strings.HasPrefix(name, "__") {
			continue
		}
		for _, f := range def.Fields {
			if strings.HasPrefix(f.Name, "__") {
				continue
			}
			elem := schema.Types[f.Type.Name()]
			paged := f.Arguments.ForName("first") != nil || f.Arguments.ForName("last") != nil
			isList := f.Type.Elem != nil && (slices.Contains(elem.Interfaces, "Node") || name == "Query")
			switch {
			case strings.HasSuffix(f.Type.Name(), "Connection"):
				connections++
				if f.Arguments.ForName("first") == nil || f.Arguments.ForName("last") == nil {
					t.Errorf("connection %s.%s takes no first/last: its page cannot be bounded or costed", name, f.Name)
					continue
				}
				if got := cost(name, f.Name, map[string]any{"first": int64(7)}); got < 7*child {
					t.Errorf("%s.%s(first: 7) costs %d, want at least %d", name, f.Name, got, 7*child)
				}
				if got := cost(name, f.Name, map[string]any{"last": int64(900)}); got < 900*child {
					t.Errorf("%s.%s(last: 900) costs %d, want at least %d", name, f.Name, got, 900*child)
				}
				if got := cost(name, f.Name, nil); got < MaxPageSize*child {
					t.Errorf("%s.%s without first/last costs %d, want at least %d", name, f.Name, got, MaxPageSize*child)
				}
			case paged:
				lists++
				if got := cost(name, f.Name, map[string]any{"first": int64(300)}); got < 300*child {
					t.Errorf("%s.%s(first: 300) costs %d, want at least %d", name, f.Name, got, 300*child)
				}
			case isList && def.Fields.ForName("pageInfo") == nil:
				lists++
				if got := cost(name, f.Name, nil); got < UnpagedRows*child {
					t.Errorf("list %s.%s costs %d, want at least %d", name, f.Name, got, UnpagedRows*child)
				}
			default:
				if got := cost(name, f.Name, nil); got != child+1 {
					t.Errorf("%s.%s costs %d, want %d", name, f.Name, got, child+1)
				}
			}
		}
	}
	if connections < 19 || lists < 20 {
		t.Fatalf("found %d connection fields and %d other lists; the walk missed some", connections, lists)
	}
}

func TestPageArg(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   any
		want int
	}{
		{nil, -1}, {int64(5), 5}, {5, 5}, {float64(5), 5}, {"12", 12}, {"x", -1},
		{int64(-3), 0}, {int64(1 << 40), MaxPageSize}, {true, -1},
	} {
		if got := pageArg(tc.in); got != tc.want {
			t.Errorf("pageArg(%#v) = %d, want %d", tc.in, got, tc.want)
		}
	}
	if satMul(maxInt/2, 3) != maxInt || satAdd(maxInt, 1) != maxInt {
		t.Error("cost arithmetic overflows")
	}
}
