package graph

import (
	"slices"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// rootFields are what metrics and traces call an operation: the distinct
// names of the fields at the root of oc's operation, through fragments,
// sorted, without __typename. They are the schema's names, a bounded set;
// never the client's free-text operation name or aliases, which would let
// a caller make a series or span name per request. The walk stops at
// limit+1 names: callers only need to know there are more.
func rootFields(oc *graphql.OperationContext, limit int) []string {
	var seen []string
	var walk func(set ast.SelectionSet, depth int)
	walk = func(set ast.SelectionSet, depth int) {
		for _, sel := range set {
			if len(seen) > limit {
				return
			}
			switch s := sel.(type) {
			case *ast.Field:
				if s.Name != "__typename" && !slices.Contains(seen, s.Name) {
					seen = append(seen, s.Name)
				}
			case *ast.InlineFragment:
				walk(s.SelectionSet, depth+1)
			case *ast.FragmentSpread:
				// Validation forbids fragment cycles; a bound costs nothing.
				if f := oc.Doc.Fragments.ForName(s.Name); f != nil && depth < 8 {
					walk(f.SelectionSet, depth+1)
				}
			}
		}
	}
	walk(oc.Operation.SelectionSet, 0)
	slices.Sort(seen)
	return seen
}
