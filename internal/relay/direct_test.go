package relay_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/relay"
	"github.com/levers9/levers9/internal/viewer"
)

// directPrefix is the path another front door (deployments) serves a
// job's port under in these tests.
const directPrefix = "/endpoint/rt"

// directFront is a front door's stand-in: it authenticates the API token
// and relays everything under directPrefix to job's web/http.
func directFront(h *relay.Handler, authn *auth.Service, jobID string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := authn.FromRequest(r)
		if err != nil || v == nil {
			http.Error(w, "sign in", http.StatusUnauthorized)
			return
		}
		h.Direct(w, r.WithContext(viewer.NewContext(r.Context(), v)), relay.Dest{Job: jobID, Service: "web", Port: "http", Prefix: directPrefix})
	})
}

// TestDirect: a front door relays HTTP and WebSockets to a job's port as
// the viewer it chose, its prefix cut off and credentials stripped; a
// replica without the node's tunnel forwards the request as it came to
// the one holding it, which serves it through the same front door.
func TestDirect(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		db := fixture.Open(t, dbURL)
		tn := fixture.NewTenant(t, db, fixture.TenantOptions{Slug: "acme"})
		other := fixture.NewTenant(t, db, fixture.TenantOptions{Slug: "globex"})
		alice := tn.AddMember(t, "alice")
		aliceTok, strangerTok := tn.Token(t, alice), other.Token(t, other.Admin)
		authn := auth.NewService(db.Ent, fixture.Log(), nil)

		// The job's service: a WebSocket echo at /ws, else a JSON echo.
		app := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/ws" {
				c, err := websocket.Accept(rw, r, nil)
				if err != nil {
					return
				}
				defer c.CloseNow()
				for {
					typ, b, err := c.Read(r.Context())
					if err != nil {
						return
					}
					if err := c.Write(r.Context(), typ, []byte(strings.ToUpper(string(b)))); err != nil {
						return
					}
				}
			}
			http.SetCookie(rw, &http.Cookie{Name: "app", Value: "1", Path: "/"})
			_ = json.NewEncoder(rw).Encode(map[string]any{
				"uri": r.URL.RequestURI(), "prefix": r.Header.Get("X-Forwarded-Prefix"),
				"authorization": r.Header.Get("Authorization"), "forwarded": r.Header.Get(relay.ForwardedHeader),
			})
		}))
		t.Cleanup(app.Close)
		js := fixture.Jobs(db, nil)
		nd := tn.AddNode(t, fixture.Node{Name: "n1", Queues: []string{tn.DefaultQueue}})
		j := tn.Submit(t, js, alice, jobspec.Service{Name: "web", Command: []string{"true"}, CPU: 1, MemoryMiB: 64,
			Ports: []jobspec.Port{{Name: "http", Port: 80}}})
		sys := fixture.Sys()
		if err := db.Ent.Job.UpdateOneID(j.ID).SetStatus(job.StatusRunning).Exec(sys); err != nil {
			t.Fatal(err)
		}
		if err := db.Ent.Service.Update().Where(service.JobID(j.ID)).SetStatus(service.StatusRunning).SetNodeID(nd.ID).
			SetHostPorts([]jobspec.Port{{Name: "http", Port: 40000}}).Exec(sys); err != nil {
			t.Fatal(err)
		}

		// B holds the node's tunnel; A holds none and forwards to B.
		serve := func(h *relay.Handler) *httptest.Server {
			mux := http.NewServeMux()
			mux.Handle(directPrefix+"/", directFront(h, authn, j.ID))
			s := httptest.NewServer(mux)
			t.Cleanup(s.Close)
			return s
		}
		b := serve(&relay.Handler{Relay: &relay.Service{Jobs: js, Tunnel: dialTunnel{app.Listener.Addr().String()}}, Auth: authn})
		a := serve(&relay.Handler{Relay: &relay.Service{Jobs: js, Tunnel: notHere{}, Replicas: replicaAt{b.URL}, Replica: "http://a.internal"}, Auth: authn})

		for _, srv := range []struct{ name, url string }{{"holding the tunnel", b.URL}, {"forwarded", a.URL}} {
			t.Run("http "+srv.name, func(t *testing.T) {
				req, _ := http.NewRequest(http.MethodGet, srv.url+directPrefix+"/some/path?q=1", nil)
				req.Header.Set("Authorization", "Bearer "+aliceTok)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				var got map[string]string
				if err := json.Unmarshal(body, &got); resp.StatusCode != http.StatusOK || err != nil {
					t.Fatalf("%d %s", resp.StatusCode, body)
				}
				if got["uri"] != "/some/path?q=1" || got["prefix"] != directPrefix || got["authorization"] != "" || got["forwarded"] != "" {
					t.Errorf("the service saw %v", got)
				}
				if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "sandbox") {
					t.Errorf("Content-Security-Policy = %q; want a sandbox", csp)
				}
				if c := resp.Cookies(); len(c) != 1 || c[0].Path != directPrefix+"/" {
					t.Errorf("cookies %v; want app scoped to the prefix", c)
				}
			})
			t.Run("websocket "+srv.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.url, "http")+directPrefix+"/ws",
					&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + aliceTok}}})
				if err != nil {
					t.Fatalf("dial: %v (%v)", err, resp)
				}
				defer c.CloseNow()
				if err := c.Write(ctx, websocket.MessageText, []byte("hello")); err != nil {
					t.Fatal(err)
				}
				if typ, got, err := c.Read(ctx); err != nil || typ != websocket.MessageText || string(got) != "HELLO" {
					t.Fatalf("echo: %v %q %v", typ, got, err)
				}
				_ = c.Close(websocket.StatusNormalClosure, "")
			})
		}
		t.Run("a viewer who may not see the job", func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, a.URL+directPrefix+"/x", nil)
			req.Header.Set("Authorization", "Bearer "+strangerTok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("status %d; want 404", resp.StatusCode)
			}
		})
	})
}
