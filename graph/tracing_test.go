package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/levers9/levers9/graph"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/tracing"
)

// A query's span is named by its type and root fields as the schema
// names them (never the client's free-text operation name or aliases; at
// most three), follows a signed-in caller's traceparent and not an
// anonymous one's, and records the answer's error codes; a refusal does
// not fail the span.
func TestOperationSpans(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		exp := tracetest.NewInMemoryExporter()
		p := tracing.NewSynced(exp, tracing.Config{Service: tracing.ServerService})
		t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
		e := newEnv(t, url, func(r *graph.Resolver) { r.Tracer = p.Tracer() })
		tn := e.newTenant("acme")
		const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

		cases := []struct {
			name, token, query string
			span               string
			followed           bool
			codes              []string
		}{
			{"alias and operation name ignored", tn.memberToken, `query Free_Text_123 { me: viewer { user { id } } }`,
				"graphql query viewer", true, nil},
			{"fields sorted and bounded", tn.memberToken, `{ viewer { user { id } } queues { totalCount } apiTokens { totalCount } nodes { totalCount } }`,
				"graphql query apiTokens,nodes,queues,…", true, nil},
			{"fragments", tn.memberToken, `query { ...F } fragment F on Query { viewer { user { id } } }`,
				"graphql query viewer", true, nil},
			{"refusal recorded, span OK", tn.memberToken, `{ node(id: "job_nope") { id } }`,
				"graphql query node", true, []string{"NOT_FOUND"}},
			{"anonymous caller starts a new trace", "", `{ viewer { user { id } } }`,
				"graphql query viewer", false, []string{"UNAUTHENTICATED"}},
		}
		for _, tc := range cases {
			exp.Reset()
			body, _ := json.Marshal(map[string]any{"query": tc.query})
			req, _ := http.NewRequest(http.MethodPost, e.srv.URL, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Traceparent", parent)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			spans := exp.GetSpans()
			if len(spans) != 1 {
				t.Errorf("%s: %d spans, want 1", tc.name, len(spans))
				continue
			}
			s := spans[0]
			if s.Name != tc.span {
				t.Errorf("%s: span %q, want %q", tc.name, s.Name, tc.span)
			}
			followed := s.SpanContext.TraceID().String() == parent[3:35] && s.Parent.SpanID().String() == parent[36:52]
			if followed != tc.followed {
				t.Errorf("%s: trace %s under %s: followed the caller's traceparent %v, want %v",
					tc.name, s.SpanContext.TraceID(), s.Parent.SpanID(), followed, tc.followed)
			}
			var got []string
			for _, a := range s.Attributes {
				if a.Key == "levers9.error.codes" {
					got = a.Value.AsStringSlice()
				}
			}
			if !slices.Equal(got, tc.codes) {
				t.Errorf("%s: error codes %v, want %v", tc.name, got, tc.codes)
			}
			if s.Status.Code == codes.Error {
				t.Errorf("%s: span failed (%s) on a refusal", tc.name, s.Status.Description)
			}
		}
	})
}
