package relay_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/relay"
	"github.com/levers9/levers9/internal/relayaddr"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// domainWorld is the relay on a relay domain in front of a dashboard
// stand-in, with a job whose service is a local HTTP server (the node's
// tunnel dials it).
type domainWorld struct {
	srv         *httptest.Server
	domain      *relay.Domain
	jobs        *jobs.Service
	app         string // the service's address
	tn          *fixture.Tenant
	authn       *auth.Service
	store       *memStore
	clock       *fixture.Clock
	jobID       string
	host        string // the job's relay host, with the test server's port
	seen        chan *http.Request
	aliceTok    string // alice's API token
	strangerTok string // another tenant's admin's: may not see alice's job
}

const testDomain = "relay.test"

func newDomainWorld(t *testing.T, dbURL string) *domainWorld {
	t.Helper()
	db := fixture.Open(t, dbURL)
	tn := fixture.NewTenant(t, db, fixture.TenantOptions{Slug: "acme"})
	store := &memStore{m: map[string][]byte{}}
	authn := auth.NewService(db.Ent, fixture.Log(), nil)
	w := &domainWorld{tn: tn, authn: authn, store: store, clock: fixture.NewClock(time.Now()), seen: make(chan *http.Request, 16)}
	alice := tn.AddMember(t, "alice")
	other := fixture.NewTenant(t, db, fixture.TenantOptions{Slug: "globex"})
	w.aliceTok, w.strangerTok = tn.Token(t, alice), other.Token(t, other.Admin)

	// The job's service: answers with what it was sent and tries to set
	// a relay cookie of its own.
	app := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.seen <- r
		http.SetCookie(rw, &http.Cookie{Name: "levers9_relay", Value: "planted"})
		http.SetCookie(rw, &http.Cookie{Name: "app", Value: "1"})
		_, _ = io.WriteString(rw, "app "+r.URL.RequestURI())
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
	w.jobID, w.jobs, w.app = j.ID, js, app.Listener.Addr().String()

	h := &relay.Handler{
		Relay:  &relay.Service{Jobs: js, Tunnel: dialTunnel{app.Listener.Addr().String()}},
		Auth:   authn,
		Domain: testDomain,
		// The dashboard stand-in: its session cookie holds the sign-in
		// token's ID (scs keeps it in the session's data).
		Sessions: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				if c, err := r.Cookie(sessionCookie); err == nil {
					if v, err := authn.AuthenticateSession(r.Context(), c.Value); err == nil {
						r = r.WithContext(viewer.NewContext(r.Context(), v))
					}
				}
				next.ServeHTTP(rw, r)
			})
		},
		SessionCookie: sessionCookie,
	}
	mux := http.NewServeMux()
	h.Routes(mux)
	mux.HandleFunc("/", func(rw http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(rw, "dashboard") })
	d := &relay.Domain{Relay: h, Store: store, Now: w.clock.Now}
	d.Routes(mux)
	w.srv = httptest.NewServer(d.Front(mux))
	t.Cleanup(w.srv.Close)
	d.PublicURL, w.domain = w.srv.URL, d
	_, port, _ := net.SplitHostPort(w.srv.Listener.Addr().String())
	w.host = relayaddr.Host(testDomain, j.ID, "web", "http") + ":" + port
	return w
}

// memStore is a relay.Store in memory (production uses the dashboard's
// session table, which this package may not import).
type memStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *memStore) CommitCtx(_ context.Context, key string, b []byte, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = b
	return nil
}

func (s *memStore) FindCtx(_ context.Context, key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[key]
	return b, ok, nil
}

func (s *memStore) DeleteCtx(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	return nil
}

func (s *memStore) TakeCtx(_ context.Context, key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[key]
	delete(s.m, key)
	return b, ok, nil
}

// dialTunnel is a node whose every stream is a connection to addr.
type dialTunnel struct{ addr string }

func (d dialTunnel) OpenStream(ctx context.Context, _ string, open wire.StreamOpen) (net.Conn, error) {
	if open.Kind != wire.StreamTCP || open.Port != 40000 {
		return nil, errors.New("unexpected stream")
	}
	return (&net.Dialer{}).DialContext(ctx, "tcp", d.addr)
}

func (dialTunnel) HoldsStreams(string) bool { return true }

// browser is an HTTP client that reaches every host at the test server
// (as wildcard DNS would) and keeps cookies, without following redirects.
func (w *domainWorld) browser(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := w.srv.Listener.Addr().String()
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Jar: jar, Transport: tr, Timeout: time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// signIn gives c a dashboard session of email's user and returns its
// sign-in token's ID.
func (w *domainWorld) signIn(t *testing.T, c *http.Client, email string) string {
	t.Helper()
	_, tok, err := w.authn.SignIn(context.Background(), email, fixture.Password, "test")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(w.srv.URL)
	c.Jar.SetCookies(u, []*http.Cookie{{Name: sessionCookie, Value: tok.ID, Path: "/"}})
	return tok.ID
}

func get(t *testing.T, c *http.Client, u string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// handoff follows a relay host's sign-in redirects by hand and returns
// the ticket URL the dashboard sent the browser to.
func (w *domainWorld) handoff(t *testing.T, c *http.Client, path string) string {
	t.Helper()
	resp := get(t, c, "http://"+w.host+path)
	want := w.srv.URL + "/relay/auth?to=" + url.QueryEscape("http://"+w.host+path)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
		t.Fatalf("unsigned request: %d to %q; want a redirect to %q", resp.StatusCode, resp.Header.Get("Location"), want)
	}
	resp = get(t, c, want)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "http://"+w.host+relay.AuthPath+"?ticket=") {
		t.Fatalf("handoff: %d to %q, %s", resp.StatusCode, loc, body(t, resp))
	}
	return loc
}

func TestDomainHandoff(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		w := newDomainWorld(t, dbURL)
		c := w.browser(t)

		// Other hosts are the dashboard's.
		if got := body(t, get(t, c, w.srv.URL+"/x")); got != "dashboard" {
			t.Errorf("dashboard host: %q", got)
		}
		// An API token works directly; the service never sees it.
		resp := get(t, c, "http://"+w.host+"/a?b=1", "Authorization", "Bearer "+w.aliceTok)
		if got := body(t, resp); resp.StatusCode != 200 || got != "app /a?b=1" {
			t.Fatalf("with a token: %d %q", resp.StatusCode, got)
		}
		if r := <-w.seen; r.Header.Get("Authorization") != "" || r.Host != w.host {
			t.Errorf("the service saw Authorization %q, Host %q", r.Header.Get("Authorization"), r.Host)
		}
		if resp := get(t, c, "http://"+w.host+"/", "Authorization", "Bearer "+w.strangerTok); resp.StatusCode != http.StatusNotFound {
			t.Errorf("another tenant's token on alice's job: %d", resp.StatusCode)
		}
		// A script's request or a WebSocket without credentials is refused,
		// not redirected.
		if resp := get(t, c, "http://"+w.host+"/", "Upgrade", "websocket"); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("WebSocket without credentials: %d", resp.StatusCode)
		}

		// Not signed in: the dashboard sends the browser to sign in.
		ticketURL := func() string {
			resp := get(t, c, w.srv.URL+"/relay/auth?to="+url.QueryEscape("http://"+w.host+"/"))
			return resp.Header.Get("Location")
		}
		if loc := ticketURL(); !strings.HasPrefix(loc, "/signin?next=") {
			t.Errorf("not signed in: sent to %q", loc)
		}
		tokenID := w.signIn(t, c, "alice@acme.test")
		ticket := w.handoff(t, c, "/p/q?r=s")
		resp = get(t, c, ticket)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/p/q?r=s" {
			t.Fatalf("redeeming: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		var cookie *http.Cookie
		for _, ck := range resp.Cookies() {
			if ck.Name == "levers9_relay" {
				cookie = ck
			}
		}
		if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode || cookie.Domain != "" || cookie.Secure {
			t.Fatalf("relay cookie %+v: want host-only, HttpOnly, Lax, not Secure over http", cookie)
		}
		// Used once.
		if resp := get(t, c, ticket); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("a used ticket: %d", resp.StatusCode)
		}
		// The cookie works; the service neither sees nor sets it.
		resp = get(t, c, "http://"+w.host+"/p/q?r=s")
		if got := body(t, resp); resp.StatusCode != 200 || got != "app /p/q?r=s" {
			t.Fatalf("with the relay cookie: %d %q", resp.StatusCode, got)
		}
		if r := <-w.seen; strings.Contains(r.Header.Get("Cookie"), "levers9") {
			t.Errorf("the service saw cookies %q", r.Header.Get("Cookie"))
		}
		for _, ck := range resp.Cookies() {
			if ck.Name != "app" {
				t.Errorf("the service set cookie %s", ck.Name)
			}
		}
		// The page runs on its own origin: no sandbox.
		if csp := resp.Header.Get("Content-Security-Policy"); csp != "" {
			t.Errorf("CSP %q on the relay domain", csp)
		}
		// The cookie is good for its host only.
		other := strings.Replace(w.host, "http-web-", "80-web-", 1)
		req, _ := http.NewRequest(http.MethodGet, "http://"+other+"/", nil)
		req.AddCookie(&http.Cookie{Name: "levers9_relay", Value: cookie.Value})
		if resp, err := w.browser(t).Do(req); err != nil || resp.StatusCode != http.StatusSeeOther {
			t.Errorf("the cookie on another host: %v, %v", resp.StatusCode, err)
		}

		// Tickets: forged, expired, for another host, refused.
		forged := ticket[:strings.Index(ticket, "=")+1] + "AAAA" + ticket[strings.Index(ticket, "=")+5:]
		if resp := get(t, c, forged); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("a forged ticket: %d", resp.StatusCode)
		}
		expired := w.handoff(t, w.signedIn(t, "alice@acme.test"), "/")
		w.clock.Advance(61 * time.Second)
		if resp := get(t, c, expired); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("an expired ticket: %d", resp.StatusCode)
		}
		elsewhere := w.handoff(t, w.signedIn(t, "alice@acme.test"), "/")
		elsewhere = strings.Replace(elsewhere, w.host, other, 1)
		if resp := get(t, c, elsewhere); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("another host's ticket: %d", resp.StatusCode)
		}

		// `to` must be a relay host the viewer may reach.
		for _, to := range []string{"https://evil.example/", "//evil.example/", "http://" + testDomain + "/",
			"http://user@" + w.host + "/", "javascript:alert(1)", "http://http-web-job_nope." + testDomain + "/"} {
			resp := get(t, c, w.srv.URL+"/relay/auth?to="+url.QueryEscape(to))
			if resp.StatusCode < 400 || strings.Contains(resp.Header.Get("Location"), "evil") {
				t.Errorf("to=%s: %d to %q", to, resp.StatusCode, resp.Header.Get("Location"))
			}
		}
		stranger := w.signedIn(t, "admin@globex.test")
		if resp := get(t, stranger, w.srv.URL+"/relay/auth?to="+url.QueryEscape("http://"+w.host+"/")); resp.StatusCode != http.StatusNotFound {
			t.Errorf("another tenant's admin asks for alice's job: %d", resp.StatusCode)
		}

		// Signing out ends relay access.
		if err := w.authn.EndSession(context.Background(), tokenID); err != nil {
			t.Fatal(err)
		}
		resp = get(t, c, "http://"+w.host+"/p")
		if resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Location"), "/relay/auth?") {
			t.Errorf("after signing out: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
		}

		// Behind https, a ticket goes to the relay host over https even
		// when asked for http.
		w.domain.PublicURL = "https://dashboard.test"
		resp = get(t, w.signedIn(t, "alice@acme.test"), w.srv.URL+"/relay/auth?to="+url.QueryEscape("http://"+w.host+"/"))
		if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, "https://"+w.host+relay.AuthPath+"?ticket=") {
			t.Errorf("behind https, the ticket goes to %q", loc)
		}
	})
}

// signedIn is a new browser signed in to the dashboard as email.
func (w *domainWorld) signedIn(t *testing.T, email string) *http.Client {
	c := w.browser(t)
	w.signIn(t, c, email)
	return c
}
