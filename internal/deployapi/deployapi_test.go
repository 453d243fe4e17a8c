package deployapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/deployapi"
	"github.com/levers9/levers9/internal/functions"
)

// TestEndpoints: deployments answer over HTTP as the notes' contract
// says, a Go runner standing in for Python's.
func TestEndpoints(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		specs := func() []functions.FunctionSpec {
			return []functions.FunctionSpec{
				{Name: "predict", Kind: function.KindENDPOINT, HTTPMethod: "POST"},
				{Name: "slow", Kind: function.KindENDPOINT, SyncTimeoutSeconds: 1},
				{Name: "boom", Kind: function.KindENDPOINT},
				{Name: "run", Kind: function.KindFUNCTION},
				{Name: "work", Kind: function.KindTASK_QUEUE},
				{Name: "hello", Kind: function.KindENDPOINT, Public: true},
				{Name: "stuck", Kind: function.KindFUNCTION},
			}
		}
		// Version 2 is live: unversioned URLs reach it.
		v1, v2 := w.deploy(t, "shop", specs()...), w.deploy(t, "shop", specs()...)
		seen := make(chan request, 16)
		w.serve(t, v1["predict"].ID, func(req request) (*response, string) {
			seen <- req
			return echo("v1")(req)
		})
		w.serve(t, v2["predict"].ID, echo("v2"))
		// wait blocks a runner until ch closes or the test ends.
		wait := func(ch chan struct{}) {
			select {
			case <-ch:
			case <-w.ctx.Done():
			}
		}
		release, never := make(chan struct{}), make(chan struct{})
		for _, v := range []map[string]*ent.Function{v1, v2} {
			w.serve(t, v["slow"].ID, func(req request) (*response, string) {
				wait(release)
				return echo("slow")(req)
			})
			w.serve(t, v["stuck"].ID, func(req request) (*response, string) {
				wait(never)
				return echo("stuck")(req)
			})
			w.serve(t, v["boom"].ID, func(request) (*response, string) { return nil, "ValueError: boom" })
			w.serve(t, v["run"].ID, echo("run"))
			w.serve(t, v["hello"].ID, echo("hello"))
		}

		t.Run("a sync endpoint answers with the function's response", func(t *testing.T) {
			r := w.do(t, "POST", "/endpoint/predict/v1/a/b?x=1", w.token, []byte(`{"x":1}`),
				"Content-Type", "application/json", "Cookie", "levers9_session=secret", "X-Custom", "yes")
			if r.status != 200 || string(r.body) != `{"x":1}` || r.header.Get("X-Tag") != "v1" || r.header.Get(deployapi.TaskHeader) == "" {
				t.Fatalf("%d %v %q", r.status, r.header, r.body)
			}
			if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "sandbox") {
				t.Errorf("CSP %q: want a sandbox", csp)
			}
			req := <-seen
			if req.Method != "POST" || req.Path != "/a/b" || req.Query != "x=1" || req.Prefix != "/endpoint/predict/v1" {
				t.Errorf("the runner saw %+v", req)
			}
			if req.header("authorization") != nil || req.header("cookie") != nil {
				t.Errorf("credentials reached the function: %v", req.Headers)
			}
			if got := req.header("x-custom"); len(got) != 1 || got[0] != "yes" {
				t.Errorf("headers %v: want x-custom", req.Headers)
			}
		})
		t.Run("versions and the alias reach their own function", func(t *testing.T) {
			for path, tag := range map[string]string{"/endpoint/predict": "v2", "/endpoint/predict/v2": "v2", "/endpoint/predict/v1": "v1"} {
				r := w.do(t, "POST", path, w.token, []byte(`{}`))
				if r.status != 200 || r.header.Get("X-Tag") != tag {
					t.Errorf("%s: %d %s %q; want %s", path, r.status, r.header.Get("X-Tag"), r.body, tag)
				}
				if tag == "v1" {
					<-seen
				}
			}
			if r := w.do(t, "POST", "/endpoint/predict/v3", w.token, []byte(`{}`)); r.status != 404 {
				t.Errorf("an unknown version: %d", r.status)
			}
		})
		t.Run("another method is 405", func(t *testing.T) {
			r := w.do(t, "GET", "/endpoint/predict", w.token, nil)
			if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "POST" {
				t.Fatalf("%d %v", r.status, r.header)
			}
			r.refusal(t)
		})
		t.Run("a long call answers 202, then its task URL the answer", func(t *testing.T) {
			r := w.do(t, "GET", "/endpoint/slow/x", w.token, nil)
			if r.status != http.StatusAccepted {
				t.Fatalf("%d %q", r.status, r.body)
			}
			st := r.state(t)
			if loc := r.header.Get("Location"); loc != "/api/tasks/"+st.Task || st.URL != loc || r.header.Get(deployapi.TaskHeader) != st.Task {
				t.Fatalf("Location %q, body %+v", loc, st)
			}
			if p := w.do(t, "GET", st.URL, w.token, nil); p.status != http.StatusAccepted || p.state(t).Task != st.Task {
				t.Fatalf("polling a running task: %d %q", p.status, p.body)
			}
			close(release)
			p := w.do(t, "GET", st.URL+"?wait=30", w.token, nil)
			if p.status != 200 || p.header.Get("X-Tag") != "slow" || p.header.Get("X-Path") != "/x" || p.header.Get(deployapi.TaskHeader) != st.Task {
				t.Fatalf("the ended task: %d %v %q", p.status, p.header, p.body)
			}
			if o := w.do(t, "GET", st.URL, w.outsider, nil); o.status != 404 {
				t.Errorf("another tenant polls the task: %d", o.status)
			}
		})
		t.Run("a failing function is 500 with its task", func(t *testing.T) {
			r := w.do(t, "POST", "/endpoint/boom", w.token, nil)
			e := r.refusal(t)
			if r.status != 500 || e.Error.Code != "FUNCTION_ERROR" || !strings.Contains(e.Error.Message, "boom") || e.Error.Task == "" ||
				r.header.Get(deployapi.TaskHeader) != e.Error.Task {
				t.Fatalf("%d %+v", r.status, e)
			}
		})
		t.Run("a job answers 202 at once, and its task the result", func(t *testing.T) {
			r := w.do(t, "POST", "/job/run", w.token, []byte(`{"args":[1],"kwargs":{"k":"v"}}`))
			if r.status != http.StatusAccepted {
				t.Fatalf("%d %q", r.status, r.body)
			}
			p := w.do(t, "GET", r.state(t).URL+"?wait=30", w.token, nil)
			if p.status != 200 || string(p.body) != `{"args":[1],"kwargs":{"k":"v"}}` {
				t.Fatalf("%d %q", p.status, p.body)
			}
			if r := w.do(t, "POST", "/function/run?wait=30", w.token, []byte(`{"args":[2]}`)); r.status != 200 || string(r.body) != `{"args":[2]}` {
				t.Errorf("the older name, waiting: %d %q", r.status, r.body)
			}
			if r := w.do(t, "GET", "/job/run", w.token, nil); r.status != http.StatusMethodNotAllowed {
				t.Errorf("GET a job: %d", r.status)
			}
			if r := w.do(t, "POST", "/job/run", w.token, []byte(`[1]`)); r.status != 400 {
				t.Errorf("a body that is no args object: %d", r.status)
			}
		})
		t.Run("a cancelled call is 409", func(t *testing.T) {
			r := w.do(t, "POST", "/job/stuck", w.token, nil)
			id := r.state(t).Task
			if _, err := w.fn.CancelTask(w.tn.AsAdmin(), id); err != nil {
				t.Fatal(err)
			}
			p := w.do(t, "GET", "/api/tasks/"+id+"?wait=30", w.token, nil)
			if e := p.refusal(t); p.status != http.StatusConflict || e.Error.Code != "CANCELLED" || e.Error.Task != id {
				t.Fatalf("%d %+v", p.status, e)
			}
		})
		t.Run("a Python-made call's task shows its state, not its pickles", func(t *testing.T) {
			tk, err := w.fn.Call(w.tn.AsAdmin(), v2["run"].ID, functions.Payload{Data: []byte("\x80\x04pickle")})
			if err != nil {
				t.Fatal(err)
			}
			p := w.do(t, "GET", "/api/tasks/"+tk.ID+"?wait=30", w.token, nil)
			var got struct {
				Task, State string
				Error       struct{ Code, Message, Task string }
			}
			if err := json.Unmarshal(p.body, &got); err != nil || p.status != 200 || got.Task != tk.ID || got.State != "ERROR" || got.Error.Code != "FUNCTION_ERROR" {
				t.Fatalf("%d %q", p.status, p.body)
			}
		})
		t.Run("a queue's idempotency key returns the first task", func(t *testing.T) {
			first := w.do(t, "POST", "/queue/work", w.token, []byte(`{"path":"a.png"}`), "Idempotency-Key", "k1")
			if first.status != http.StatusAccepted {
				t.Fatalf("%d %q", first.status, first.body)
			}
			again := w.do(t, "POST", "/taskqueue/work", w.token, []byte(`{"path":"a.png"}`), "Idempotency-Key", "k1")
			if again.status != 200 || again.state(t).Task != first.state(t).Task {
				t.Fatalf("again: %d %q; first %q", again.status, again.body, first.body)
			}
			if r := w.do(t, "POST", "/queue/work", w.token, []byte(`{"path":"b.png"}`), "Idempotency-Key", "k2"); r.status != 202 || r.state(t).Task == first.state(t).Task {
				t.Errorf("another key: %d %q", r.status, r.body)
			}
			if r := w.do(t, "POST", "/queue/work", w.token, []byte(`not json`)); r.status != 400 {
				t.Errorf("an item that is no JSON: %d", r.status)
			}
			if r := w.do(t, "POST", "/queue/work", w.token, []byte(`1`), "Idempotency-Key", strings.Repeat("k", 201)); r.status != 400 {
				t.Errorf("a key too long: %d", r.status)
			}
		})
		t.Run("no token is 401", func(t *testing.T) {
			for _, tok := range []string{"", "lv9_nope"} {
				if r := w.do(t, "POST", "/endpoint/predict", tok, nil); r.status != 401 || r.refusal(t).Error.Code != "UNAUTHENTICATED" {
					t.Errorf("token %q: %d %q", tok, r.status, r.body)
				}
			}
		})
		t.Run("another tenant's deployment is unknown", func(t *testing.T) {
			theirs := w.do(t, "POST", "/endpoint/predict", w.outsider, nil)
			unknown := w.do(t, "POST", "/endpoint/nothing", w.token, nil)
			if theirs.status != 404 || unknown.status != 404 ||
				!bytes.Equal(theirs.body, bytes.ReplaceAll(unknown.body, []byte("nothing"), []byte("predict"))) {
				t.Fatalf("theirs %d %q, unknown %d %q", theirs.status, theirs.body, unknown.status, unknown.body)
			}
			if r := w.do(t, "POST", "/queue/predict", w.token, nil); r.status != 404 {
				t.Errorf("an endpoint under /queue: %d", r.status)
			}
		})
		t.Run("a public deployment answers at /pub without a token", func(t *testing.T) {
			r := w.do(t, "GET", "/pub/acme/"+w.env+"/endpoint/hello/p?q=1", "", nil)
			if r.status != 200 || r.header.Get("X-Tag") != "hello" || r.header.Get("X-Path") != "/p" {
				t.Fatalf("%d %v %q", r.status, r.header, r.body)
			}
			// Its task's ID is the capability: pollable without a token,
			// unlike a private deployment's.
			if p := w.do(t, "GET", "/api/tasks/"+r.header.Get(deployapi.TaskHeader)+"?wait=1", "", nil); p.status != 200 || p.header.Get("X-Tag") != "hello" {
				t.Errorf("polling a public task anonymously: %d %q", p.status, p.body)
			}
			private := w.do(t, "POST", "/endpoint/predict", w.token, []byte(`{}`))
			if p := w.do(t, "GET", "/api/tasks/"+private.header.Get(deployapi.TaskHeader), "", nil); p.status != 404 {
				t.Errorf("polling a private task anonymously: %d %q", p.status, p.body)
			}
			for _, path := range []string{"/pub/acme/" + w.env + "/endpoint/predict", "/pub/globex/" + w.env + "/endpoint/hello", "/pub/acme/nope/endpoint/hello"} {
				if r := w.do(t, "POST", path, "", []byte(`{}`)); r.status != 404 {
					t.Errorf("%s: %d %q", path, r.status, r.body)
				}
			}
		})
		t.Run("an unknown box is 404", func(t *testing.T) {
			r := w.do(t, "GET", "/pod/web/8080/", w.token, nil)
			if e := r.refusal(t); r.status != 404 || !strings.Contains(e.Error.Message, "deployment /box/web not found") {
				t.Fatalf("%d %+v", r.status, e)
			}
		})
		t.Run("a body over 1 MiB is 413", func(t *testing.T) {
			if r := w.do(t, "POST", "/endpoint/predict", w.token, bytes.Repeat([]byte("x"), deployapi.MaxBody+1)); r.status != http.StatusRequestEntityTooLarge {
				t.Fatalf("%d %q", r.status, r.body)
			}
		})
		t.Run("a body of 1 MiB goes in a blob", func(t *testing.T) {
			body, _ := json.Marshal(strings.Repeat("y", deployapi.MaxBody-2))
			if r := w.do(t, "POST", "/endpoint/hello", w.token, body); r.status != 200 || len(r.body) != len(body) {
				t.Fatalf("%d, %d bytes", r.status, len(r.body))
			}
		})
	})
}
