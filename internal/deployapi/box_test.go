package deployapi_test

import (
	"testing"

	"github.com/levers9/levers9/ent/container"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/functions"
)

// TestBox: a request under /box/NAME/PORT/ (or /pod/…), HTTP or
// WebSocket, is relayed to that port of a ready container of the box,
// the prefix up to the port cut off; a port the box does not declare,
// another tenant's box or a box's non-public URL without a token is the
// same 404 as no box at all.
func TestBox(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		fns := w.deploy(t, "boxes",
			functions.FunctionSpec{Name: "web", Kind: function.KindBOX, Ports: []int{8000, 8001}, SyncTimeoutSeconds: 30},
			functions.FunctionSpec{Name: "open", Kind: function.KindBOX, Ports: []int{8080}, Public: true, SyncTimeoutSeconds: 30})
		w.serve(t, fns["web"].ID, echo("never called"))
		w.serve(t, fns["open"].ID, echo("never called"))
		ws := []string{"Upgrade", "websocket", "Connection", "Upgrade", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version", "13"}

		for _, tc := range []struct {
			path, token string
			hdr         []string
			prefix      string
		}{
			{"/box/web/8000/a/b?x=1", w.token, nil, "/box/web/8000"},
			{"/box/web/8001/", w.token, ws, "/box/web/8001"},
			{"/pod/web/8000/x", w.token, nil, "/pod/web/8000"},
			{"/box/web/v1/8000/x", w.token, nil, "/box/web/v1/8000"},
			{"/pub/acme/main/box/open/8080/", "", nil, "/pub/acme/main/box/open/8080"},
		} {
			r := w.do(t, "GET", tc.path, tc.token, nil, tc.hdr...)
			if r.status != 200 || string(r.body) != "relayed" {
				t.Fatalf("%s: %d %q", tc.path, r.status, r.body)
			}
			d, path := w.relay.last()
			fn := fns["web"]
			if tc.token == "" {
				fn = fns["open"]
			}
			cs, err := w.tn.DB.Ent.Container.Query().Where(container.FunctionID(fn.ID), container.StateEQ(container.StateREADY)).All(fixture.Sys())
			if err != nil || len(cs) != 1 {
				t.Fatalf("ready containers %v, %v", cs, err)
			}
			port := tc.prefix[len(tc.prefix)-4:]
			if d.Job != cs[0].JobID || d.Service != functions.RunnerService || d.Port != port || d.Prefix != tc.prefix {
				t.Errorf("%s: relayed to %+v, path %q", tc.path, d, path)
			}
		}
		if r := w.do(t, "GET", "/box/web/8000", w.token, nil); r.status != 308 || r.header.Get("Location") != "/box/web/8000/" {
			t.Errorf("a port without its slash: %d %q", r.status, r.header.Get("Location"))
		}
		for _, tc := range []struct{ path, token string }{
			{"/box/web/9999/", w.token},
			{"/box/web/08000/", w.token},
			{"/box/web/", w.token},
			{"/box/web", w.token},
			{"/box/web/x/", w.token},
			{"/box/web/8000/", w.outsider},
			{"/pub/acme/main/box/web/8000/", ""},
			{"/endpoint/web/8000/", w.token},
			{"/box/nope/8000/", w.token},
		} {
			if r := w.do(t, "GET", tc.path, tc.token, nil); r.status != 404 {
				t.Errorf("%s: %d %q", tc.path, r.status, r.body)
			}
		}
	})
}
