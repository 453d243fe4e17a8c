package relay_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/relay"
	"github.com/levers9/levers9/internal/tunnel"
	"github.com/levers9/levers9/internal/wire"
)

// notHere is a replica holding no node's stream tunnel.
type notHere struct{}

func (notHere) OpenStream(context.Context, string, wire.StreamOpen) (net.Conn, error) {
	return nil, tunnel.ErrNotHere
}

func (notHere) HoldsStreams(string) bool { return false }

// replicaAt says every node's stream tunnel is at url.
type replicaAt struct{ url string }

func (r replicaAt) StreamReplica(context.Context, string) (string, error) { return r.url, nil }

// Replica A, without the node's tunnel, forwards to replica B with the
// user's credentials (B authenticates them again); a forwarded request
// is never forwarded again; a replica that is gone makes UNAVAILABLE.
func TestForwardToReplica(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		w := newDomainWorld(t, dbURL)
		// B: holds the node's tunnel (the dashboard-less relay of w's job).
		var seenByB atomic.Pointer[http.Request]
		bRelay := &relay.Handler{Relay: &relay.Service{Jobs: w.jobs, Tunnel: dialTunnel{w.app}}, Auth: w.authn}
		bMux := http.NewServeMux()
		bRelay.Routes(bMux)
		b := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			seenByB.Store(r.Clone(context.Background()))
			bMux.ServeHTTP(rw, r)
		}))
		t.Cleanup(b.Close)
		gone := httptest.NewServer(http.NotFoundHandler())
		gone.Close()

		serveA := func(to string) *httptest.Server {
			h := &relay.Handler{Relay: &relay.Service{Jobs: w.jobs, Tunnel: notHere{}, Replicas: replicaAt{to}, Replica: "http://a.internal"}, Auth: w.authn}
			mux := http.NewServeMux()
			h.Routes(mux)
			s := httptest.NewServer(mux)
			t.Cleanup(s.Close)
			return s
		}
		a := serveA(b.URL)
		do := func(base, token string, hdr ...string) (int, string) {
			req, _ := http.NewRequest(http.MethodGet, base+"/relay/"+w.jobID+"/web/http/x?y=1", nil)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			for i := 0; i+1 < len(hdr); i += 2 {
				req.Header.Set(hdr[i], hdr[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK {
				var ref struct{ Code string }
				_ = json.Unmarshal(body, &ref)
				return resp.StatusCode, ref.Code
			}
			return resp.StatusCode, string(body)
		}

		if status, body := do(a.URL, w.aliceTok); status != http.StatusOK || body != "app /x?y=1" {
			t.Fatalf("through A: %d %q", status, body)
		}
		if r := seenByB.Swap(nil); r == nil || r.Header.Get("Authorization") != "Bearer "+w.aliceTok || r.Header.Get(relay.ForwardedHeader) == "" {
			t.Fatalf("B got %v", r)
		}
		if r := <-w.seen; r.Header.Get("Authorization") != "" || r.Header.Get(relay.ForwardedHeader) != "" {
			t.Errorf("the service saw %v", r.Header)
		}
		// Someone A cannot authenticate is refused before any forwarding.
		if status, code := do(a.URL, "lv9_nope"); status != http.StatusUnauthorized || seenByB.Load() != nil {
			t.Errorf("a bad token: %d %s, forwarded: %v", status, code, seenByB.Load() != nil)
		}
		// A request forwarded already is not forwarded again (a loop).
		if status, code := do(a.URL, w.aliceTok, relay.ForwardedHeader, "1"); status != http.StatusServiceUnavailable || code != "UNAVAILABLE" || seenByB.Load() != nil {
			t.Errorf("forwarded twice: %d %s", status, code)
		}
		// The replica holding the node is gone.
		if status, code := do(serveA(gone.URL).URL, w.aliceTok); status != http.StatusServiceUnavailable || code != "UNAVAILABLE" {
			t.Errorf("replica gone: %d %s", status, code)
		}
	})
}
