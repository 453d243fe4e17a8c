package deployapi_test

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent/container"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/functions"
)

// TestRealtime: a WebSocket to a REALTIME endpoint is relayed to a ready
// container's runner port, the prefix cut off by the relay; anything
// else is refused.
func TestRealtime(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		fns := w.deploy(t, "chat", functions.FunctionSpec{Name: "rt", Kind: function.KindREALTIME, SyncTimeoutSeconds: 30})
		w.serve(t, fns["rt"].ID, echo("never called"))
		ws := []string{"Upgrade", "websocket", "Connection", "keep-alive, Upgrade", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version", "13"}

		r := w.do(t, "GET", "/endpoint/rt/room/1?x=1", w.token, nil, ws...)
		if r.status != 200 || string(r.body) != "relayed" {
			t.Fatalf("%d %q", r.status, r.body)
		}
		cs, err := w.tn.DB.Ent.Container.Query().Where(container.FunctionID(fns["rt"].ID), container.StateEQ(container.StateREADY)).All(fixture.Sys())
		if err != nil || len(cs) != 1 {
			t.Fatalf("ready containers %v, %v", cs, err)
		}
		d, path := w.relay.last()
		if d.Job != cs[0].JobID || d.Service != functions.RunnerService || d.Port != functions.RealtimePort || d.Prefix != "/endpoint/rt" || path != "/endpoint/rt/room/1" {
			t.Errorf("relayed to %+v, path %q", d, path)
		}
		if r := w.do(t, "GET", "/endpoint/rt/v1/x", w.token, nil, ws...); r.status != 200 {
			t.Errorf("the version's URL: %d %q", r.status, r.body)
		} else if d, _ := w.relay.last(); d.Prefix != "/endpoint/rt/v1" {
			t.Errorf("the version's prefix: %q", d.Prefix)
		}
		if r := w.do(t, "GET", "/endpoint/rt", w.token, nil); r.status != 400 {
			t.Errorf("no handshake: %d %q", r.status, r.body)
		}
		if r := w.do(t, "GET", "/endpoint/rt", w.outsider, nil, ws...); r.status != 404 {
			t.Errorf("another tenant: %d %q", r.status, r.body)
		}
	})
}

// segments are what random deployment paths are made of.
var segments = []string{"", "job", "function", "endpoint", "queue", "taskqueue", "box", "pod", "pub", "acme", "globex",
	"main", "predict", "hello", "v1", "v2", "v0", "v01", "v9999999999", "app_x", "app_", "..", ".", "%2F", "a b", "\x00",
	"é", "-x", "x-", strings.Repeat("n", 70), "api", "tasks"}

func randomPath(rnd *rand.Rand) string {
	n := rnd.IntN(8)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = segments[rnd.IntN(len(segments))]
	}
	return "/" + strings.Join(parts, "/")
}

// TestRandomPaths sends random paths straight to the handler (no mux
// cleaning them first): whatever ParseRoute makes of them, the answer is
// a refusal, never a panic or a 5xx.
func TestRandomPaths(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		w.deploy(t, "shop", functions.FunctionSpec{Name: "predict", Kind: function.KindENDPOINT, HTTPMethod: "POST"},
			functions.FunctionSpec{Name: "hello", Kind: function.KindENDPOINT, HTTPMethod: "POST", Public: true})
		rnd := rand.New(rand.NewPCG(1, 2))
		for range 2000 {
			dispatch(t, w, randomPath(rnd))
		}
	})
}

// FuzzDispatch is TestRandomPaths as a fuzz target (SQLite).
func FuzzDispatch(f *testing.F) {
	w := newWorld(f, dbtest.URL(f, "sqlite"))
	w.deploy(f, "shop", functions.FunctionSpec{Name: "predict", Kind: function.KindENDPOINT, HTTPMethod: "POST"},
		functions.FunctionSpec{Name: "hello", Kind: function.KindENDPOINT, HTTPMethod: "POST", Public: true})
	for _, s := range []string{"/", "/endpoint/predict", "/pub/acme/main/endpoint/hello/v1/x", "/box/x", "/job//v1", "/queue/a/app_1/b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) { dispatch(t, w, path) })
}

// dispatch GETs path with acme's token: only 400, 404 or 405 (the
// deployed endpoints take POST) may answer.
func dispatch(t *testing.T, w *world, path string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.URL.Path = path
	req.Header.Set("Authorization", "Bearer "+w.token)
	rec := httptest.NewRecorder()
	w.api.ServeHTTP(rec, req)
	switch rec.Code {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
	default:
		t.Fatalf("GET %q: %d %q", path, rec.Code, rec.Body.String())
	}
}
