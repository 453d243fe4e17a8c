package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/levers9/levers9/agent"
	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/tracing"
)

// clientParent is a client's own span: a signed-in client's trace goes on
// into the server under it.
const (
	clientTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpan   = "00f067aa0ba902b7"
	clientParent = "00-" + clientTrace + "-" + clientSpan + "-01"
)

// A job submitted over GraphQL by a signed-in client that sends a
// traceparent runs on a joined agent; the server's spans (GraphQL
// operation, submit, placement, dispatch) and the agent's (its start and
// the runtime's) make one trace, the client's, each under the one before,
// and each process's spans carry its own service name. An anonymous
// caller's traceparent is not followed: its operation starts a trace of
// its own.
func TestOneTracePerJobAcrossServerAndAgent(t *testing.T) {
	t.Parallel()
	serverSpans, agentSpans := tracetest.NewInMemoryExporter(), tracetest.NewInMemoryExporter()
	base, token := startTracedServer(t, serverSpans)
	gqlPost(t, base, token, "", `mutation($u: ID!) { grantTokens(input: {userID: $u, tokens: 100000, reason: "tracing"}) { id } }`,
		map[string]any{"u": viewerID(t, base, token)}, nil)
	startTracedAgent(t, base, token, agentSpans)

	var sub struct{ SubmitJob struct{ ID string } }
	gqlPost(t, base, token, clientParent, `mutation { submitJob(spec: {name: "traced", queue: "default",
		services: [{name: "main", command: ["true"], cpu: 1, memoryMiB: 64}]}) { id } }`, nil, &sub)
	jobID := sub.SubmitJob.ID
	waitFor(t, "the job to complete", func() bool {
		var out struct{ Node struct{ Status string } }
		gqlPost(t, base, token, "", `query($id: ID!) { node(id: $id) { ... on Job { status } } }`, map[string]any{"id": jobID}, &out)
		if s := out.Node.Status; s == "ERROR" || s == "CANCELLED" {
			t.Fatalf("job ended %s", s)
		}
		return out.Node.Status == "COMPLETE"
	})
	waitFor(t, "the agent's start span", func() bool { return findSpan(agentSpans.GetSpans(), "agent.start", jobID) != nil })

	server, nodeSide := serverSpans.GetSpans(), agentSpans.GetSpans()
	op := findSpan(server, "graphql mutation submitJob", "")
	submit := findSpan(server, "jobs.submit", jobID)
	place := findSpan(server, "scheduler.place", jobID)
	dispatch := findSpan(server, "tunnel.dispatch", jobID)
	start := findSpan(nodeSide, "agent.start", jobID)
	if op == nil || submit == nil || place == nil || dispatch == nil || start == nil {
		t.Fatalf("missing spans: operation %v, submit %v, place %v, dispatch %v, agent start %v\nserver: %v\nagent: %v",
			op != nil, submit != nil, place != nil, dispatch != nil, start != nil, names(server), names(nodeSide))
	}
	var runtimeStart *tracetest.SpanStub
	for i, s := range nodeSide {
		if s.Name == "agent.runtime.start" && s.Parent.SpanID() == start.SpanContext.SpanID() {
			runtimeStart = &nodeSide[i]
		}
	}
	if runtimeStart == nil {
		t.Fatalf("no agent.runtime.start under agent.start; agent spans: %v", names(nodeSide))
	}
	for _, c := range []struct {
		child, parent *tracetest.SpanStub
	}{{submit, op}, {place, submit}, {dispatch, submit}, {start, dispatch}, {runtimeStart, start}} {
		if c.child.SpanContext.TraceID().String() != clientTrace {
			t.Errorf("%s is in trace %s, want the client's %s", c.child.Name, c.child.SpanContext.TraceID(), clientTrace)
		}
		if c.child.Parent.SpanID() != c.parent.SpanContext.SpanID() {
			t.Errorf("%s's parent is %s, want %s (%s)", c.child.Name, c.child.Parent.SpanID(), c.parent.Name, c.parent.SpanContext.SpanID())
		}
	}
	if op.Parent.SpanID().String() != clientSpan || !op.Parent.IsRemote() {
		t.Errorf("the operation's parent is %v, want the client's span %s", op.Parent.SpanID(), clientSpan)
	}
	// The placement links to its pass, a trace of its own.
	pass := findSpan(server, "scheduler.pass", "")
	if pass == nil || len(place.Links) != 1 || place.Links[0].SpanContext.SpanID() != pass.SpanContext.SpanID() {
		t.Errorf("scheduler.place links %v, want the pass %v", place.Links, pass)
	} else if pass.SpanContext.TraceID() == place.SpanContext.TraceID() {
		t.Error("the pass shares the job's trace; it serves many jobs and has its own")
	}
	for _, c := range []struct {
		spans   tracetest.SpanStubs
		service string
	}{{tracetest.SpanStubs{*op, *submit, *dispatch}, tracing.ServerService}, {tracetest.SpanStubs{*start, *runtimeStart}, tracing.AgentService}} {
		for _, s := range c.spans {
			if got := resourceService(s); got != c.service {
				t.Errorf("%s has service.name %q, want %q", s.Name, got, c.service)
			}
		}
	}

	// Anonymous: a traceparent naming the job's trace is not followed,
	// whatever the operation (here one it may not run).
	serverSpans.Reset()
	gqlErrorsPost(t, base, "", clientParent, `mutation { submitJob(spec: {queue: "default", services: [{name: "x", command: ["true"]}]}) { id } }`)
	anon := findSpan(serverSpans.GetSpans(), "graphql mutation submitJob", "")
	if anon == nil {
		t.Fatalf("no span for the anonymous operation: %v", names(serverSpans.GetSpans()))
	}
	if anon.SpanContext.TraceID().String() == clientTrace || anon.Parent.IsValid() {
		t.Errorf("an anonymous caller joined trace %s (parent %v)", anon.SpanContext.TraceID(), anon.Parent.SpanID())
	}
	if findSpan(serverSpans.GetSpans(), "jobs.submit", "") != nil {
		t.Error("an anonymous submission reached jobs.submit")
	}
}

// startTracedServer runs `levers9 server` in-process without a node of its
// own, its spans going to exp, and returns its URL and API token.
func startTracedServer(t *testing.T, exp tracing.Exporter) (base, token string) {
	t.Helper()
	return runTestServer(t, nil, func(c *serverConfig) { c.spanExporter = exp })
}

// startTracedAgent joins a node with the process runtime through an
// invite and runs its agent in-process, its spans going to exp.
func startTracedAgent(t *testing.T, base, token string, exp tracing.Exporter) {
	t.Helper()
	var inv struct{ CreateNodeInvite struct{ Code string } }
	gqlPost(t, base, token, "", `mutation { createNodeInvite(nodeName: "traced") { code } }`, nil, &inv)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := agent.Join(ctx, agent.JoinConfig{Server: base, Invite: inv.CreateNodeInvite.Code, StateDir: dir,
		Inventory: agent.Declared{CPUs: 4, MemoryMiB: 4096}.Apply(agent.DetectInventory(ctx))}); err != nil {
		cancel()
		t.Fatal(err)
	}
	rt, err := runtime.NewProcess(runtime.ProcessConfig{Root: filepath.Join(dir, "jobs"), StopGrace: time.Second})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	p := tracing.NewSynced(exp, tracing.Config{Service: tracing.AgentService, Version: "test"})
	done := make(chan error, 1)
	go func() {
		done <- agent.Run(ctx, agent.Config{StateDir: dir, Inventory: agent.Declared{CPUs: 4, MemoryMiB: 4096}.Apply(agent.DetectInventory(ctx)),
			Runtime: rt, Version: "test", Tracer: p.Tracer()})
	}()
	// Before the server stops (cleanups run last-in first-out).
	t.Cleanup(func() {
		cancel()
		<-done
		_ = p.Shutdown(context.Background())
	})
}

func viewerID(t *testing.T, base, token string) string {
	var me struct {
		Viewer struct{ User struct{ ID string } }
	}
	gqlPost(t, base, token, "", `{ viewer { user { id } } }`, nil, &me)
	return me.Viewer.User.ID
}

type gqlError struct {
	Message    string
	Extensions map[string]any
}

// gqlPost sends a GraphQL request, with a W3C traceparent header when
// traceparent is set, and decodes its data into out; errors fail t.
func gqlPost(t *testing.T, base, token, traceparent, query string, vars map[string]any, out any) {
	t.Helper()
	data, errs := gqlSend(t, base, token, traceparent, query, vars)
	if len(errs) > 0 {
		t.Fatalf("GraphQL errors: %+v", errs)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatal(err)
		}
	}
}

// gqlErrorsPost sends a request that must fail.
func gqlErrorsPost(t *testing.T, base, token, traceparent, query string) {
	t.Helper()
	if _, errs := gqlSend(t, base, token, traceparent, query, nil); len(errs) == 0 {
		t.Fatalf("%s: no error", query)
	}
}

func gqlSend(t *testing.T, base, token, traceparent, query string, vars map[string]any) (json.RawMessage, []gqlError) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, err := http.NewRequest(http.MethodPost, base+"/graphql", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if traceparent != "" {
		req.Header.Set("Traceparent", traceparent)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Data   json.RawMessage
		Errors []gqlError
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("decoding the answer (HTTP %d): %v", resp.StatusCode, err)
	}
	return r.Data, r.Errors
}

// waitFor polls ok until it holds; the bound only catches hangs.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(90 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// findSpan is the first span named name (about job jobID, when set).
func findSpan(spans tracetest.SpanStubs, name, jobID string) *tracetest.SpanStub {
	for i, s := range spans {
		if s.Name == name && (jobID == "" || hasAttr(s.Attributes, tracing.JobID, jobID)) {
			return &spans[i]
		}
	}
	return nil
}

func hasAttr(attrs []attribute.KeyValue, k attribute.Key, v string) bool {
	for _, a := range attrs {
		if a.Key == k && a.Value.AsString() == v {
			return true
		}
	}
	return false
}

func resourceService(s tracetest.SpanStub) string {
	v, _ := s.Resource.Set().Value("service.name")
	return v.AsString()
}

func names(spans tracetest.SpanStubs) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name + "@" + s.SpanContext.TraceID().String()[:8]
	}
	return out
}

// --otlp-endpoint and LEVERS9_OTLP_ENDPOINT are checked at start, and a
// bad value names where it came from; the agent refuses one too.
func TestOTLPEndpointFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, flag, env string
		want, errWith   string
	}{
		{"off by default", "", "", "", ""},
		{"from the environment", "", "http://collector:4318", "http://collector:4318", ""},
		{"flag wins", "--otlp-endpoint=https://otel.example.com", "http://collector:4318", "https://otel.example.com", ""},
		{"bad variable", "", "collector:4318", "", "LEVERS9_OTLP_ENDPOINT"},
		{"bad flag", "--otlp-endpoint=http://user:pw@collector:4318", "", "", "--otlp-endpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"--data-dir=" + t.TempDir()}
			if tc.flag != "" {
				args = append(args, tc.flag)
			}
			lookup := func(name string) (string, bool) {
				if name == "LEVERS9_OTLP_ENDPOINT" && tc.env != "" {
					return tc.env, true
				}
				return "", false
			}
			cfg, err := parseServerConfig(args, lookup, io.Discard)
			if tc.errWith != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errWith) {
					t.Fatalf("err = %v, want one naming %s", err, tc.errWith)
				}
				return
			}
			if err != nil || cfg.OTLPEndpoint != tc.want {
				t.Fatalf("endpoint %q, err %v; want %q", cfg.OTLPEndpoint, err, tc.want)
			}
		})
	}
	var out strings.Builder
	if code := runAgent(context.Background(), []string{"--state-dir", t.TempDir(), "--otlp-endpoint", "grpc://collector:4317"}, &out); code != exitUsage ||
		!strings.Contains(out.String(), "--otlp-endpoint") {
		t.Fatalf("agent with a bad endpoint: exit %d, %q", code, out.String())
	}
}
