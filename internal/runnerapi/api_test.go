package runnerapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/container"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/functions"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/runnerapi"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/wire"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

var codeHash = strings.Repeat("ab", 32)

// allBlobs says every blob is uploaded: these tests pass payloads inline.
type allBlobs struct{}

func (allBlobs) Has(context.Context, string) (bool, error) { return true, nil }

// world is a tenant with a node on its default queue, two apps (vision:
// embed and rank; other: spy) with one call each, and the runner API
// served for embed's container.
type world struct {
	fn                *functions.Service
	srv               *httptest.Server
	embed, rank, spy  *ent.Task
	embedFn, embedApp string
}

func newWorld(t *testing.T, url string) *world {
	t.Helper()
	tn := fixture.New(t, url, fixture.TenantOptions{Slug: "acme"})
	bus := notify.New(nil, fixture.Log())
	js := fixture.Jobs(tn.DB, time.Now)
	js.Bus = bus
	fn := &functions.Service{DB: tn.DB, Log: fixture.Log(), Now: time.Now, Bus: bus, Jobs: js, Blobs: allBlobs{}}
	node := tn.AddNode(t, fixture.Node{Name: "n1", Queues: []string{tn.DefaultQueue}})
	ctx := tn.AsAdmin()
	deploy := func(name string, fns ...string) *ent.App {
		spec := functions.AppSpec{Name: name, CodeHash: codeHash}
		for _, f := range fns {
			fs := functions.FunctionSpec{Name: f, Module: "app", Qualname: f, Queue: tenancy.DefaultQueue}
			if f == "resize" {
				fs.Kind = function.KindTASK_QUEUE
			}
			spec.Functions = append(spec.Functions, fs)
		}
		a, err := fn.DeployEphemeral(ctx, spec)
		if err != nil {
			t.Fatalf("deploying %s: %v", name, err)
		}
		return a
	}
	call := func(fnID, arg string) *ent.Task {
		task, err := fn.Call(ctx, fnID, functions.Payload{Data: []byte(arg)})
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	vision, other := deploy("vision", "embed", "rank", "resize"), deploy("other", "spy")
	w := &world{fn: fn, embedApp: vision.ID}
	for _, f := range vision.Edges.Functions {
		switch f.Name {
		case "embed":
			w.embedFn = f.ID
			w.embed = call(f.ID, "one")
		case "rank":
			w.rank = call(f.ID, "two")
		}
	}
	w.spy = call(other.Edges.Functions[0].ID, "three")

	// embed's container, placed on the node and identified as its agent
	// would.
	c, err := tn.DB.Ent.Container.Query().Where(container.FunctionID(w.embedFn)).First(fixture.Sys())
	if err != nil || c.JobID == "" {
		t.Fatalf("embed's container: %v, %+v", err, c)
	}
	if err := tn.DB.Ent.Service.Update().Where(service.JobID(c.JobID)).SetNodeID(node.ID).Exec(fixture.Sys()); err != nil {
		t.Fatal(err)
	}
	api := runnerapi.New(fn, nil, fixture.Log())
	if _, err := api.Identify(context.Background(), "node_elsewhere", wire.RunnerOpen{JobID: c.JobID, Attempt: 1}); err == nil {
		t.Error("another node identified embed's container")
	}
	rctx, err := api.Identify(context.Background(), node.ID, wire.RunnerOpen{JobID: c.JobID, Attempt: 1})
	if err != nil {
		t.Fatalf("identifying embed's runner: %v", err)
	}
	w.srv = httptest.NewUnstartedServer(api.Handler())
	w.srv.Config.BaseContext = func(net.Listener) context.Context { return rctx }
	w.srv.Start()
	t.Cleanup(w.srv.Close)
	return w
}

// do sends a request and decodes the JSON answer into out (when not nil).
func (w *world) do(t *testing.T, method, path, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, w.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %q: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

type apiError struct {
	Error struct{ Code, Message string }
}

type taskJSON struct {
	ID, State string
	Result    *struct{ Data, Blob string }
	ErrorKind string
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestClaimOwnFunctionOnly(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		var fn struct{ ID, Name, App, Module, Qualname, Kind, HTTPMethod string }
		if code := w.do(t, "GET", "/runner/v1/function", "", &fn); code != 200 || fn.ID != w.embedFn || fn.Name != "embed" || fn.App != w.embedApp ||
			fn.Kind != "FUNCTION" || fn.HTTPMethod != "" {
			t.Fatalf("function: %d %+v", code, fn)
		}
		var claim struct {
			Tasks []struct {
				ID      string
				Attempt int
				Args    struct{ Data string }
				Source  string
			}
			Exit bool
		}
		if code := w.do(t, "POST", "/runner/v1/claim", `{"max":10,"waitMs":0,"phases":{"processStartedAt":"2026-01-01T00:00:00.5Z"}}`, &claim); code != 200 {
			t.Fatalf("claim: %d", code)
		}
		if len(claim.Tasks) != 1 || claim.Tasks[0].ID != w.embed.ID || claim.Tasks[0].Args.Data != b64("one") ||
			claim.Tasks[0].Source != "CALL" || claim.Exit {
			t.Fatalf("claimed %+v; want embed's one call only", claim)
		}
		// Its outcome is recorded with the next claim.
		done := `{"max":0,"waitMs":0,"done":[{"task":"` + w.embed.ID + `","attempt":1,"startedAt":"2026-01-01T00:00:01Z",` +
			`"finishedAt":"2026-01-01T00:00:02Z","result":{"data":"` + b64("ONE") + `"}}]}`
		if code := w.do(t, "POST", "/runner/v1/claim", done, &claim); code != 200 || len(claim.Tasks) != 0 {
			t.Fatalf("reporting: %d %+v", code, claim)
		}
		var got taskJSON
		if code := w.do(t, "POST", "/runner/v1/await", `{"task":"`+w.embed.ID+`","waitMs":1000}`, &got); code != 200 ||
			got.State != "COMPLETE" || got.Result == nil || got.Result.Data != b64("ONE") {
			t.Fatalf("await: %d %+v", code, got)
		}
	})
}

func TestOtherAppIsNotFound(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		// The same app's call is the runner's to await and cancel.
		var got taskJSON
		if code := w.do(t, "POST", "/runner/v1/await", `{"task":"`+w.rank.ID+`"}`, &got); code != 200 || got.ID != w.rank.ID || got.State != "PENDING" {
			t.Fatalf("await rank: %d %+v", code, got)
		}
		// Another app's is not there at all.
		for _, path := range []string{"/runner/v1/await", "/runner/v1/cancel"} {
			var e apiError
			if code := w.do(t, "POST", path, `{"task":"`+w.spy.ID+`"}`, &e); code != 404 || e.Error.Code != "NOT_FOUND" {
				t.Errorf("%s of another app's call: %d %+v; want 404 NOT_FOUND", path, code, e)
			}
		}
		var e apiError
		if code := w.do(t, "POST", "/runner/v1/call", `{"function":"spy","args":{"data":"`+b64("x")+`"}}`, &e); code != 404 {
			t.Errorf("calling another app's function: %d %+v; want 404", code, e)
		}
		if code := w.do(t, "POST", "/runner/v1/cancel", `{"task":"`+w.rank.ID+`"}`, &got); code != 200 || got.State != "CANCELLED" {
			t.Errorf("cancel rank: %d %+v", code, got)
		}
	})
}

// TestPut: a function puts items on its own app's task queues, keyed or
// not; nothing else takes puts.
func TestPut(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		var first, again taskJSON
		body := `{"function":"resize","item":{"data":"` + b64("a.jpg") + `"},"idempotencyKey":"k"}`
		if code := w.do(t, "POST", "/runner/v1/put", body, &first); code != 200 || first.State != "PENDING" {
			t.Fatalf("put: %d %+v", code, first)
		}
		if code := w.do(t, "POST", "/runner/v1/put", body, &again); code != 200 || again.ID != first.ID {
			t.Fatalf("the same key again: %d %+v; want task %s", code, again, first.ID)
		}
		for _, tc := range []struct {
			fn, code string
			status   int
		}{{"rank", "BAD_USER_INPUT", 400}, {"spy", "NOT_FOUND", 404}} {
			var e apiError
			body := `{"function":"` + tc.fn + `","item":{"data":"` + b64("x") + `"}}`
			if code := w.do(t, "POST", "/runner/v1/put", body, &e); code != tc.status || e.Error.Code != tc.code {
				t.Errorf("put on %s: %d %+v; want %d %s", tc.fn, code, e, tc.status, tc.code)
			}
		}
	})
}

func TestBadRequests(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		for _, tc := range []struct {
			name, method, path, body string
			status                   int
			code                     string
		}{
			{"not JSON", "POST", "/runner/v1/claim", `{"max":`, 400, "BAD_USER_INPUT"},
			{"unknown field", "POST", "/runner/v1/claim", `{"max":1,"bogus":true}`, 400, "BAD_USER_INPUT"},
			{"two values", "POST", "/runner/v1/await", `{"task":"t"} {}`, 400, "BAD_USER_INPUT"},
			{"wrong type", "POST", "/runner/v1/await", `{"task":1}`, 400, "BAD_USER_INPUT"},
			{"negative wait", "POST", "/runner/v1/await", `{"task":"t","waitMs":-1}`, 400, "BAD_USER_INPUT"},
			{"not base64", "POST", "/runner/v1/call", `{"function":"rank","args":{"data":"!!"}}`, 400, "BAD_USER_INPUT"},
			{"too large", "POST", "/runner/v1/cancel", `{"task":"` + strings.Repeat("x", 100<<10) + `"}`, 413, "BAD_USER_INPUT"},
			{"no route", "GET", "/runner/v1/nothing", "", 404, "NOT_FOUND"},
			{"no blobs here", "GET", "/runner/v1/blobs/" + codeHash, "", 503, "UNAVAILABLE"},
		} {
			var e apiError
			if code := w.do(t, tc.method, tc.path, tc.body, &e); code != tc.status || e.Error.Code != tc.code {
				t.Errorf("%s: %d %+v; want %d %s", tc.name, code, e, tc.status, tc.code)
			}
		}
	})
}

// A connection no agent identified is refused.
func TestUnidentified(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(runnerapi.New(&functions.Service{}, nil, fixture.Log()).Handler())
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/runner/v1/claim", "application/json", bytes.NewReader([]byte(`{}`)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("status %d, want 401", resp.StatusCode)
	}
}
