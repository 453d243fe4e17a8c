package e2e

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/levers9/levers9/internal/dbtest"
)

// collectedSpan is a span as an OTLP collector received it.
type collectedSpan struct {
	service, name, jobID      string
	traceID, spanID, parentID string
}

// collector is a fake OTLP/HTTP collector: it decodes what exporters POST
// to /v1/traces (protobuf, gzip or not) and keeps the spans.
type collector struct {
	*httptest.Server
	mu    sync.Mutex
	spans []collectedSpan
}

func startCollector(t *testing.T) *collector {
	c := &collector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
			t.Errorf("collector: %s %s", r.Method, r.URL.Path)
			http.NotFound(w, r)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		raw, err := io.ReadAll(body)
		var req coltrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(raw, &req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			var service string
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					service = a.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					cs := collectedSpan{service: service, name: s.Name, traceID: hex.EncodeToString(s.TraceId),
						spanID: hex.EncodeToString(s.SpanId), parentID: hex.EncodeToString(s.ParentSpanId)}
					for _, a := range s.Attributes {
						if a.Key == "levers9.job.id" {
							cs.jobID = a.Value.GetStringValue()
						}
					}
					c.spans = append(c.spans, cs)
				}
			}
		}
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(nil) // an empty ExportTraceServiceResponse
	}))
	t.Cleanup(c.Close)
	return c
}

// span is the collected span named name about job jobID, if any.
func (c *collector) span(service, name, jobID string) (collectedSpan, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.spans {
		if s.service == service && s.name == name && s.jobID == jobID {
			return s, true
		}
	}
	return collectedSpan{}, false
}

// The binaries export with --otlp-endpoint (the server's from
// LEVERS9_OTLP_ENDPOINT, a base URL; the agent's from the flag): a job
// run by a joined agent leaves one trace at the collector, the server's
// spans and the agent's under the server's dispatch.
func TestTracesReachAnOTLPCollector(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		col := startCollector(t)
		s := startServer(t, t.TempDir(), url, "LEVERS9_LOCAL_NODE=false", "LEVERS9_OTLP_ENDPOINT="+col.URL,
			"OTEL_BSP_SCHEDULE_DELAY=100")
		c := s.credentials()
		grant(t, s.URL, c.Token)
		var inv struct{ CreateNodeInvite struct{ Code string } }
		gql(t, s.URL, c.Token, `mutation { createNodeInvite(nodeName: "traced") { code } }`, nil, &inv)
		startAgent(t, "agent", "join", "--server", s.URL, "--invite", inv.CreateNodeInvite.Code,
			"--state-dir", filepath.Join(t.TempDir(), "agent"), "--cpus", "2", "--memory", "2GiB", "--runtime", "process",
			"--otlp-endpoint", col.URL+"/v1/traces")

		var sub struct{ SubmitJob struct{ ID string } }
		gql(t, s.URL, c.Token, `mutation { submitJob(spec: {name: "traced", queue: "default",
			services: [{name: "main", command: ["true"], cpu: 1, memoryMiB: 64}]}) { id } }`, nil, &sub)
		id := sub.SubmitJob.ID
		poll(t, "the job to end", func() bool {
			st := jobByID(t, s.URL, c.Token, id).Status
			return st != "PENDING" && st != "RUNNING"
		})
		if j := jobByID(t, s.URL, c.Token, id); j.Status != "COMPLETE" {
			t.Fatalf("job = %+v", j)
		}
		var submit, dispatch, start collectedSpan
		poll(t, "the server's and the agent's spans at the collector", func() bool {
			var ok1, ok2, ok3 bool
			submit, ok1 = col.span("levers9-server", "jobs.submit", id)
			dispatch, ok2 = col.span("levers9-server", "tunnel.dispatch", id)
			start, ok3 = col.span("levers9-agent", "agent.start", id)
			return ok1 && ok2 && ok3
		})
		if dispatch.traceID != submit.traceID || start.traceID != submit.traceID {
			t.Errorf("traces: submit %s, dispatch %s, agent start %s; want one", submit.traceID, dispatch.traceID, start.traceID)
		}
		if dispatch.parentID != submit.spanID || start.parentID != dispatch.spanID {
			t.Errorf("parents: dispatch under %s (submit %s), agent start under %s (dispatch %s)",
				dispatch.parentID, submit.spanID, start.parentID, dispatch.spanID)
		}
	})
}

// The built-in node's spans are an agent's (levers9-agent), exported by
// the server process beside its own, in the job's trace.
func TestBuiltInNodeTraces(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		col := startCollector(t)
		s := startServer(t, t.TempDir(), url, "LEVERS9_OTLP_ENDPOINT="+col.URL, "OTEL_BSP_SCHEDULE_DELAY=100")
		c := s.credentials()
		grant(t, s.URL, c.Token)
		var sub struct{ SubmitJob struct{ ID string } }
		gql(t, s.URL, c.Token, `mutation { submitJob(spec: {name: "traced", queue: "default",
			services: [{name: "main", command: ["true"], cpu: 0.5, memoryMiB: 64}]}) { id } }`, nil, &sub)
		id := sub.SubmitJob.ID
		var submit, start collectedSpan
		poll(t, "the job's spans at the collector", func() bool {
			var ok1, ok2 bool
			submit, ok1 = col.span("levers9-server", "jobs.submit", id)
			start, ok2 = col.span("levers9-agent", "agent.start", id)
			return ok1 && ok2
		})
		if start.traceID != submit.traceID {
			t.Errorf("the built-in node's start is in trace %s, the submission in %s", start.traceID, submit.traceID)
		}
	})
}

// A collector that does not answer costs the spans, never a job: the job
// runs to its end and the server still stops cleanly on SIGTERM.
func TestTracesWithTheCollectorDown(t *testing.T) {
	t.Parallel()
	down := "http://" + freeAddr(t) // nothing listens there
	s := startServer(t, t.TempDir(), dbtest.SQLiteURL(t), "LEVERS9_OTLP_ENDPOINT="+down, "OTEL_BSP_SCHEDULE_DELAY=100")
	c := s.credentials()
	grant(t, s.URL, c.Token)
	var sub struct{ SubmitJob struct{ ID string } }
	gql(t, s.URL, c.Token, `mutation { submitJob(spec: {name: "untraced", queue: "default",
		services: [{name: "main", command: ["true"], cpu: 0.5, memoryMiB: 64}]}) { id } }`, nil, &sub)
	poll(t, "the job to end", func() bool {
		st := jobByID(t, s.URL, c.Token, sub.SubmitJob.ID).Status
		return st != "PENDING" && st != "RUNNING"
	})
	if j := jobByID(t, s.URL, c.Token, sub.SubmitJob.ID); j.Status != "COMPLETE" {
		t.Fatalf("job = %+v", j)
	}
	s.stop()
}
