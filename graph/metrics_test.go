package graph

import (
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
)

// The operation label is the root field (its name, not an alias, never the
// operation's own name), "multiple" for several and "invalid" for what did
// not validate: a bounded set whatever callers send.
func TestOperationLabels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		query, name, typ string
	}{
		{`mutation SubmitMyJob_123 { submitJob(spec: {}) { id } }`, "submitJob", "mutation"},
		{`query Anything { a: jobs { totalCount } b: jobs { totalCount } }`, "jobs", "query"},
		{`{ __typename viewer { user { id } } }`, "viewer", "query"},
		{`query { ...F } fragment F on Query { nodes { totalCount } }`, "nodes", "query"},
		{`query { ... on Query { queues { totalCount } } jobs { totalCount } }`, "multiple", "query"},
		{`{ __typename }`, "__typename", "query"},
		{`subscription { jobLogs(jobID: "x") { seq } }`, "jobLogs", "subscription"},
	} {
		doc, err := parser.ParseQuery(&ast.Source{Input: tc.query})
		if err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		oc := &graphql.OperationContext{Doc: doc, Operation: doc.Operations[0]}
		if name, typ := operationLabels(oc); name != tc.name || typ != tc.typ {
			t.Errorf("%s: labels %q %q, want %q %q", tc.query, name, typ, tc.name, tc.typ)
		}
	}
	if name, typ := operationLabels(&graphql.OperationContext{}); name != "invalid" || typ != "unknown" {
		t.Errorf("an operation that did not validate: labels %q %q", name, typ)
	}
}
