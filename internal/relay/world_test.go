package relay_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levers9/levers9/agent"
	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/relay"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/tunnel"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// hangBound bounds every wait: it only catches hangs, it measures nothing.
const hangBound = 90 * time.Second

// sessionCookie is the dashboard's session cookie name in these tests.
const sessionCookie = "levers9_session"

// relayWorld is a server with the tunnel and the relay, one tenant (its
// admin and two members, with API tokens), another tenant's admin, and
// one node running a real agent on the process runtime.
type relayWorld struct {
	db      *database.DB
	bus     *notify.Bus
	jobs    *jobs.Service
	auth    *auth.Service
	tn      *fixture.Tenant
	srv     *tunnel.Server
	tunnel  *countingTunnel
	handler *relay.Handler
	http    *httptest.Server
	log     *slog.Logger
	sys     context.Context
	nodeID  string

	// marks are the job IDs relay activity marked, in order.
	marksMu sync.Mutex
	marks   []string

	alice, bob      *ent.User // members of tn
	aliceTok        string
	bobTok, adminTk string
	strangerTok     string // the admin of another tenant

	mu       sync.Mutex
	conns    []net.Conn
	sessions sync.WaitGroup
}

// worldOptions change what newRelayWorld builds.
type worldOptions struct {
	// sessions, when set, is the relay's dashboard session middleware.
	sessions func(*relayWorld) func(http.Handler) http.Handler
	// activityEvery is the relay's activity interval (its default when 0).
	activityEvery time.Duration
	// snapshots makes the relay's Snapshots (none when nil).
	snapshots func(*relayWorld) relay.Snapshots
}

func newRelayWorld(t *testing.T, url string, o worldOptions) *relayWorld {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	db := fixture.Open(t, url)
	tn := fixture.NewTenant(t, db, fixture.TenantOptions{Slug: "acme"})
	other := fixture.NewTenant(t, db, fixture.TenantOptions{Slug: "globex"})
	bus := notify.New(db.Pool, log)
	t.Cleanup(bus.Close)
	js := &jobs.Service{DB: db, Log: log, Now: time.Now, Bus: bus,
		Schedule: func(context.Context, *sql.Tx, string) error { return nil }}
	srv := &tunnel.Server{DB: db, Jobs: js, Logs: &joblog.Service{DB: db, Bus: bus, Log: log}, Bus: bus, Log: log, Now: time.Now,
		HeartbeatInterval: 200 * time.Millisecond, Nodes: &nodes.Service{DB: db, Ent: db.Ent, Bus: bus, Log: log, Now: time.Now}}
	authn := auth.NewService(db.Ent, log, nil)
	authn.Bus = bus
	w := &relayWorld{db: db, bus: bus, jobs: js, auth: authn, tn: tn, srv: srv, log: log,
		sys: viewer.SystemContext(ctx)}
	w.tunnel = &countingTunnel{Tunnel: srv}
	w.handler = &relay.Handler{
		Relay: &relay.Service{Jobs: js, Tunnel: w.tunnel, Log: log,
			Active: &relay.Activity{Mark: w.mark, Log: log, Every: o.activityEvery}},
		Auth: authn, SessionCookie: sessionCookie,
	}
	if o.snapshots != nil {
		w.handler.Snapshots = o.snapshots(w)
	}
	if o.sessions != nil {
		w.handler.Sessions = o.sessions(w)
	}
	mux := http.NewServeMux()
	srv.Routes(mux)
	w.handler.Routes(mux)
	w.http = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.sessions.Add(1)
		defer w.sessions.Done()
		mux.ServeHTTP(&tracked{ResponseWriter: rw, w: w}, r)
	}))
	// Sessions end before the database closes and the test completes.
	t.Cleanup(func() { w.http.Close(); w.cut(); w.sessions.Wait() })

	w.alice, w.bob = tn.AddMember(t, "alice"), tn.AddMember(t, "bob")
	w.aliceTok, w.bobTok, w.adminTk = tn.Token(t, w.alice), tn.Token(t, w.bob), tn.Token(t, tn.Admin)
	w.strangerTok = other.Token(t, other.Admin)
	w.nodeID = w.startAgent(t)
	return w
}

// mark is the relay's Activity.Mark: it records the marks and writes
// them as production does.
func (w *relayWorld) mark(ctx context.Context, ids []string, at time.Time) error {
	w.marksMu.Lock()
	w.marks = append(w.marks, ids...)
	w.marksMu.Unlock()
	return w.jobs.MarkActive(ctx, ids, at)
}

// marksOf counts the activity marks of job id.
func (w *relayWorld) marksOf(id string) int {
	w.marksMu.Lock()
	defer w.marksMu.Unlock()
	n := 0
	for _, m := range w.marks {
		if m == id {
			n++
		}
	}
	return n
}

// countingTunnel counts the streams the relay opens.
type countingTunnel struct {
	relay.Tunnel
	opened atomic.Int64
	// away holds jobs whose node this replica does not hold right now.
	away sync.Map
}

func (c *countingTunnel) OpenStream(ctx context.Context, nodeID string, open wire.StreamOpen) (net.Conn, error) {
	if _, ok := c.away.Load(open.JobID); ok {
		return nil, tunnel.ErrNotHere
	}
	c.opened.Add(1)
	return c.Tunnel.OpenStream(ctx, nodeID, open)
}

// tracked records the connections WebSockets take over, so that cleanup
// can end them.
type tracked struct {
	http.ResponseWriter
	w *relayWorld
}

func (t *tracked) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := t.ResponseWriter.(http.Hijacker).Hijack()
	if err == nil {
		t.w.mu.Lock()
		t.w.conns = append(t.w.conns, c)
		t.w.mu.Unlock()
	}
	return c, rw, err
}

func (t *tracked) Flush() {
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (t *tracked) Unwrap() http.ResponseWriter { return t.ResponseWriter }

func (w *relayWorld) cut() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.conns {
		c.Close()
	}
	w.conns = nil
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(b, "\n")))
	return len(b), nil
}

// startAgent joins a node and runs its agent on the process runtime until
// the test ends.
func (w *relayWorld) startAgent(t *testing.T) string {
	t.Helper()
	code, _, err := (&nodes.Service{Ent: w.db.Ent, Now: time.Now}).CreateInvite(w.tn.AsAdmin(), "", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	inv := wire.Inventory{CPUs: 16, MemoryMiB: 32768}
	st, err := agent.Join(context.Background(), agent.JoinConfig{Server: w.http.URL, Invite: code, Name: "n1", StateDir: dir, Inventory: inv})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.NewProcess(runtime.ProcessConfig{Root: filepath.Join(dir, "jobs"), StopGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- agent.Run(ctx, agent.Config{StateDir: dir, Inventory: inv, Runtime: rt, Log: w.log.With("agent", "n1")})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("agent.Run: %v", err)
			}
		case <-time.After(hangBound):
			t.Error("agent did not stop")
		}
	})
	waitFor(t, "node online", func() bool {
		n, err := w.db.Ent.Node.Get(w.sys, st.NodeID)
		return err == nil && n.Status == node.StatusOnline
	})
	waitFor(t, "the node's stream tunnel", func() bool { return w.srv.HoldsStreams(st.NodeID) })
	return st.NodeID
}

// waitFor polls cond until it holds; the bound only catches hangs.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// webService is service "web": testdata/webservice.py with ports http
// and echo. They declare no number: the process runtime would take it as
// the host port, which parallel tests would fight over (jobs.HostPort's
// own test covers declared numbers).
func webService(t *testing.T) jobspec.Service {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("testdata", "webservice.py"))
	if err != nil {
		t.Fatal(err)
	}
	return jobspec.Service{Name: "web", Command: []string{"python3", script}, CPU: 1, MemoryMiB: 64,
		Ports: []jobspec.Port{{Name: "http"}, {Name: "echo"}}}
}

// run submits spec as u (the admin when nil) and places it on the node,
// as the scheduler would, and waits until its services run and answer.
func (w *relayWorld) run(t *testing.T, u *ent.User, spec jobspec.Job) *ent.Job {
	t.Helper()
	if spec.Queue == "" {
		spec.Queue = tenancy.DefaultQueue
	}
	if spec.Name == "" {
		spec.Name = "t"
	}
	return w.place(t, w.tn.SubmitSpec(t, w.jobs, u, spec))
}

// place places job j on the node, as the scheduler would, and waits
// until its services run and answer.
func (w *relayWorld) place(t *testing.T, j *ent.Job) *ent.Job {
	t.Helper()
	spec := j.Spec
	if err := w.db.Ent.Service.Update().Where(service.JobID(j.ID)).SetNodeID(w.nodeID).Exec(w.sys); err != nil {
		t.Fatal(err)
	}
	if err := w.bus.Publish(context.Background(), notify.TopicNode, w.nodeID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "job "+j.ID+" running", func() bool {
		svcs, err := w.db.Ent.Service.Query().Where(service.JobID(j.ID)).All(w.sys)
		if err != nil || len(svcs) == 0 {
			return false
		}
		for _, s := range svcs {
			if s.Status != service.StatusRunning || len(s.HostPorts) != len(s.Ports) {
				return false
			}
		}
		return true
	})
	j, err := w.db.Ent.Job.Get(w.sys, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	// A service runs before it listens: wait until its ports accept
	// (directly: the node is this host), not through the relay, so that
	// tests count the relay's streams and marks from zero.
	for _, s := range spec.Services {
		for name, port := range w.hostPorts(t, j.ID, s.Name) {
			waitFor(t, "service "+s.Name+" to listen on "+name, func() bool {
				c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
				if err != nil {
					// A service that ended will never listen: say why now.
					svc, qerr := w.db.Ent.Service.Query().Where(service.JobID(j.ID), service.Name(s.Name)).Only(w.sys)
					if qerr == nil && svc.Status != service.StatusRunning {
						t.Fatalf("service %s is %s (%s) before listening on %s", s.Name, svc.Status, svc.StatusReason, name)
					}
					return false
				}
				c.Close()
				return true
			})
		}
	}
	return j
}

// hostPorts are the host ports of service svc of job id, by name.
func (w *relayWorld) hostPorts(t *testing.T, id, svc string) map[string]int {
	t.Helper()
	s, err := w.db.Ent.Service.Query().Where(service.JobID(id), service.Name(svc)).Only(w.sys)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range s.HostPorts {
		out[p.Name] = p.Port
	}
	return out
}

// do sends a request to the relay's server with token (none when "")
// and does not follow redirects.
func (w *relayWorld) do(t *testing.T, method, path, token string, hdr http.Header) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(method, w.http.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return noRedirect.Do(req)
}

var noRedirect = &http.Client{
	Timeout:       hangBound,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// refusal is a relay endpoint's JSON refusal.
type refusal struct {
	Code  string `json:"code"`
	Error string `json:"error"`
}

// readRefusal reads resp's JSON refusal.
func readRefusal(t *testing.T, resp *http.Response) refusal {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r refusal
	if err := json.Unmarshal(b, &r); err != nil || r.Code == "" || r.Error == "" {
		t.Fatalf("status %d, body %q: not a JSON refusal (%v)", resp.StatusCode, b, err)
	}
	return r
}
