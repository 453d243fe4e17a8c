package e2e

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/levers9/levers9/internal/dbtest"
)

// webApp answers every GET with "hello from the job" and the path, on the
// port named http of service web.
const webApp = `
import http.server, os
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = ("hello from the job " + self.path).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(os.environ["LEVERS9_WEB_PORT_HTTP"])), H).serve_forever()
`

// Two server replicas share one PostgreSQL database; a node's agent is
// joined to replica B. Replica A, which does not hold the node's stream
// tunnel, forwards relay requests (HTTP and a port-forward WebSocket) to
// B with the user's credentials, and B serves them; with B stopped, A
// answers UNAVAILABLE at once instead of hanging.
func TestRelayReplicas(t *testing.T) {
	t.Parallel()
	pg := dbtest.PostgresURL(t)
	// Neither replica runs a built-in node; their replica URLs are the
	// default, derived from their listen addresses (PostgreSQL).
	a := startServer(t, t.TempDir(), pg, "LEVERS9_LOCAL_NODE=false", "LEVERS9_RELAY_DOMAIN=relay.test")
	c := a.credentials()
	b := startServer(t, t.TempDir(), pg, "LEVERS9_LOCAL_NODE=false", "LEVERS9_RELAY_DOMAIN=relay.test")
	grant(t, a.URL, c.Token)
	joinAgent(t, b, c.Token, "relay-node", "--runtime", "process")

	var sub struct{ SubmitJob struct{ ID string } }
	gql(t, a.URL, c.Token, `mutation($c: [String!]!) { submitJob(spec: {name: "web", queue: "default",
		services: [{name: "web", command: $c, cpu: 1, memoryMiB: 64, ports: [{name: "http"}]}]}) { id } }`,
		map[string]any{"c": []string{"/usr/bin/python3", "-c", webApp}}, &sub)
	id := sub.SubmitJob.ID
	poll(t, "the job running", func() bool { return jobByID(t, a.URL, c.Token, id).Status == "RUNNING" })

	client := &http.Client{Timeout: stopTimeout} // only catches hangs
	relayGet := func(base string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, base+"/relay/"+id+"/web/http/some/page?x=1", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+c.Token)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("relay request to %s: %v", base, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	// The service runs before it listens: poll through A.
	const want = "hello from the job /some/page?x=1"
	var status int
	var body string
	poll(t, "the service answering through replica A", func() bool {
		status, body = relayGet(a.URL)
		return status == http.StatusOK
	})
	if body != want {
		t.Errorf("through A: %q; want %q", body, want)
	}
	if status, body := relayGet(b.URL); status != http.StatusOK || body != want {
		t.Errorf("through B: %d %q", status, body)
	}
	// Without credentials A refuses, forwarding nothing.
	if resp, err := client.Get(a.URL + "/relay/" + id + "/web/http/"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous request: %v, %v", resp.StatusCode, err)
	} else {
		resp.Body.Close()
	}

	// The relay domain through A: the job's host, served at its root.
	noRedirect := &http.Client{Timeout: stopTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	onDomain := func(token string) *http.Response {
		req, err := http.NewRequest(http.MethodGet, a.URL+"/root?x=1", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "http-web-" + id + ".relay.test"
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	if resp := onDomain(c.Token); resp.StatusCode != http.StatusOK {
		t.Errorf("relay domain with a token: %d", resp.StatusCode)
	} else if body, _ := io.ReadAll(resp.Body); string(body) != "hello from the job /root?x=1" {
		t.Errorf("relay domain with a token: %q", body)
	}
	// A browser is sent to sign in on the dashboard.
	wantSignIn := a.URL + "/relay/auth?to=" + url.QueryEscape("http://http-web-"+id+".relay.test/root?x=1")
	if resp := onDomain(""); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != wantSignIn {
		t.Errorf("relay domain without credentials: %d to %q; want %q", resp.StatusCode, resp.Header.Get("Location"), wantSignIn)
	}

	// A browser signed in on A's dashboard: the handoff's ticket, made by
	// A, is redeemed on B (replicas share tickets), and the relay cookie
	// then works through A too (forwarded); signing out ends it.
	br := newRelayBrowser(t)
	br.signIn(a.URL, c.AdminEmail, c.AdminPassword)
	relayPage := "http://http-web-" + id + ".relay.test/page"
	br.relayAt = b.URL
	if status, body := br.get(relayPage); status != http.StatusOK || body != "hello from the job /page" {
		t.Errorf("signed in through the handoff on B: %d %q", status, body)
	}
	br.relayAt = a.URL
	br.noRedirects = true
	if status, body := br.get(relayPage); status != http.StatusOK || body != "hello from the job /page" {
		t.Errorf("with the relay cookie through A: %d %q", status, body)
	}
	br.signOut(a.URL)
	if status, _ := br.get(relayPage); status != http.StatusSeeOther {
		t.Errorf("after signing out: %d; want a redirect to sign in again", status)
	}

	// Port-forward through A: a WebSocket carrying one TCP connection.
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(a.URL, "http")+"/streams/tcp/"+id+"/web/http",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + c.Token}}})
	if err != nil {
		t.Fatalf("port-forward through A: %v (%v)", err, resp)
	}
	defer ws.CloseNow()
	conn := websocket.NetConn(ctx, ws, websocket.MessageBinary)
	if _, err := io.WriteString(conn, "GET /tcp HTTP/1.0\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(conn) // the service closes after an HTTP/1.0 answer
	if !strings.HasPrefix(string(raw), "HTTP/1.0 200") || !strings.HasSuffix(string(raw), "hello from the job /tcp") {
		t.Errorf("port-forward answer: %q", raw)
	}

	// B gone: A cannot reach the node's tunnel and says so.
	b.stop()
	status, body = relayGet(a.URL)
	var refusal struct{ Code, Error string }
	if err := json.Unmarshal([]byte(body), &refusal); err != nil || status != http.StatusServiceUnavailable || refusal.Code != "UNAVAILABLE" {
		t.Errorf("with B stopped: %d %q; want 503 UNAVAILABLE", status, body)
	}
}

// relayBrowser is an HTTP client with cookies, as a browser: relay
// domain hosts resolve to relayAt (wildcard DNS), other hosts as named.
type relayBrowser struct {
	t           *testing.T
	c           *http.Client
	relayAt     string // a replica's URL
	noRedirects bool
}

func newRelayBrowser(t *testing.T) *relayBrowser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	br := &relayBrowser{t: t}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, _, _ := net.SplitHostPort(addr); strings.HasSuffix(host, ".relay.test") {
			addr = strings.TrimPrefix(br.relayAt, "http://")
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	br.c = &http.Client{Jar: jar, Transport: tr, Timeout: stopTimeout, CheckRedirect: func(*http.Request, []*http.Request) error {
		if br.noRedirects {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	return br
}

func (br *relayBrowser) get(u string) (int, string) {
	br.t.Helper()
	resp, err := br.c.Get(u)
	if err != nil {
		br.t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// post sends the form on page (for its CSRF token) to action.
func (br *relayBrowser) post(base, page, action string, form url.Values) {
	br.t.Helper()
	_, body := br.get(base + page)
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		br.t.Fatalf("no CSRF token on %s", page)
	}
	form.Set("csrf", html.UnescapeString(m[1]))
	req, err := http.NewRequest(http.MethodPost, base+action, strings.NewReader(form.Encode()))
	if err != nil {
		br.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := br.c.Do(req)
	if err != nil {
		br.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		br.t.Fatalf("POST %s: %d", action, resp.StatusCode)
	}
}

func (br *relayBrowser) signIn(base, email, password string) {
	br.t.Helper()
	br.post(base, "/signin", "/signin", url.Values{"email": {email}, "password": {password}})
}

func (br *relayBrowser) signOut(base string) {
	br.t.Helper()
	br.post(base, "/jobs", "/signout", url.Values{})
}
