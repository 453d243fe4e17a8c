package deployapi_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/container"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/blobs"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/deployapi"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/functions"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/relay"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/wire"
	"github.com/levers9/levers9/storage"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// hangBound bounds every wait: it catches hangs, it measures nothing.
const hangBound = time.Minute

// codePackage is the code every test app names; codeHash its SHA-256.
var (
	codePackage = []byte("PK fake zip of app.py")
	codeHash    = fmt.Sprintf("%x", sha256.Sum256(codePackage))
)

// world is tenant acme (its admin deploys) and tenant globex, a node
// serving acme's default queue, the functions service, and the
// deployments API in front of it, served over HTTP.
type world struct {
	tn, other *fixture.Tenant
	fn        *functions.Service
	node      *ent.Node
	api       *deployapi.API
	srv       *httptest.Server
	relay     *fakeRelay
	blobs     *blobs.Store
	token     string // acme's admin's
	outsider  string // globex's admin's
	env       string // acme's main environment's name

	ctx  context.Context // ended when the test ends: the runners stop
	runs sync.WaitGroup
}

func newWorld(t testing.TB, url string) *world {
	t.Helper()
	db := fixture.Open(t, url)
	tn := fixture.NewTenant(t, db, fixture.TenantOptions{Slug: "acme"})
	other := fixture.NewTenant(t, db, fixture.TenantOptions{Slug: "globex"})
	bus := notify.New(nil, fixture.Log())
	js := fixture.Jobs(db, time.Now)
	js.Bus = bus
	drv, err := storage.OpenLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := &blobs.Store{DB: db, Driver: drv, Log: fixture.Log()}
	for _, x := range []*fixture.Tenant{tn, other} {
		if _, err := store.Put(x.AsAdmin(), "code", codeHash, bytes.NewReader(codePackage), int64(len(codePackage))); err != nil {
			t.Fatal(err)
		}
	}
	w := &world{
		tn: tn, other: other, env: tenancy.MainEnvironment, relay: &fakeRelay{}, blobs: store,
		fn:    &functions.Service{DB: db, Log: fixture.Log(), Now: time.Now, Bus: bus, Jobs: js, Blobs: store},
		node:  tn.AddNode(t, fixture.Node{Name: "n1", Queues: []string{tn.DefaultQueue}}),
		token: tn.Token(t, tn.Admin), outsider: other.Token(t, other.Admin),
	}
	w.api = deployapi.New(deployapi.Config{Functions: w.fn, Auth: auth.NewService(db.Ent, fixture.Log(), nil),
		Relay: w.relay, Blobs: store, Log: fixture.Log()})
	mux := http.NewServeMux()
	w.api.Routes(mux)
	w.srv = httptest.NewServer(mux)
	ctx, cancel := context.WithCancel(context.Background())
	w.ctx = ctx
	// Runners stop before the server and the database close.
	t.Cleanup(func() { cancel(); w.runs.Wait(); w.srv.Close() })
	return w
}

// deploy deploys app name (a new version each time) with fns (default
// queue, module app, qualname = name) and returns its functions by name.
func (w *world) deploy(t testing.TB, name string, fns ...functions.FunctionSpec) map[string]*ent.Function {
	t.Helper()
	for i := range fns {
		if fns[i].Queue == "" {
			fns[i].Queue = tenancy.DefaultQueue
		}
		if fns[i].Module == "" {
			fns[i].Module = "app"
		}
		if fns[i].Qualname == "" {
			fns[i].Qualname = fns[i].Name
		}
	}
	a, err := w.fn.Deploy(w.tn.AsAdmin(), functions.AppSpec{Name: name, CodeHash: codeHash, Functions: fns})
	if err != nil {
		t.Fatalf("deploying %s: %v", name, err)
	}
	fs, err := w.tn.DB.Ent.Function.Query().Where().All(fixture.Sys())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*ent.Function{}
	for _, f := range fs {
		if f.AppID == a.ID && f.Version == a.Version {
			out[f.Name] = f
		}
	}
	if len(out) != len(fns) {
		t.Fatalf("deployed %d functions of version %d, want %d", len(out), a.Version, len(fns))
	}
	return out
}

// request is a request envelope as a runner reads it.
type request struct {
	Method  string      `json:"method"`
	Path    string      `json:"path"`
	Query   string      `json:"query"`
	Headers [][2]string `json:"headers"`
	Body    []byte      `json:"body"`
	Prefix  string      `json:"rootPath"`
}

func (r request) header(name string) []string {
	var out []string
	for _, h := range r.Headers {
		if h[0] == name {
			out = append(out, h[1])
		}
	}
	return out
}

// response is a response envelope as a runner returns it.
type response struct {
	Status  int         `json:"status"`
	Headers [][2]string `json:"headers"`
	Body    []byte      `json:"body"`
}

// handler answers one call: a response, or an exception's message.
type handler func(req request) (*response, string)

// echo answers 200 with the request's body and what it saw.
func echo(tag string) handler {
	return func(req request) (*response, string) {
		return &response{Status: 200, Headers: [][2]string{{"content-type", "application/json"}, {"x-tag", tag},
			{"x-path", req.Path}, {"x-method", req.Method}}, Body: req.Body}, ""
	}
}

// serve runs a runner for fnID's containers until the test ends: it
// claims its calls and answers each with h, as the Python runner would.
func (w *world) serve(t testing.TB, fnID string, h handler) {
	w.runs.Add(1)
	go func() {
		defer w.runs.Done()
		for w.ctx.Err() == nil {
			r := w.waitRunner(fnID)
			if r == nil {
				return
			}
			w.loop(t, r, h)
		}
	}()
}

// waitRunner waits for a container of fnID with a job, places the job on
// the node and identifies its runner; nil when the test ended.
func (w *world) waitRunner(fnID string) *functions.Runner {
	for {
		cs, err := w.tn.DB.Ent.Container.Query().
			Where(container.FunctionID(fnID), container.JobIDNEQ(""), container.StateIn(container.StateSTARTING, container.StateREADY)).
			All(fixture.Sys())
		if err == nil && len(cs) > 0 {
			c := cs[0]
			if err := w.tn.DB.Ent.Service.Update().Where(service.JobID(c.JobID)).SetNodeID(w.node.ID).Exec(fixture.Sys()); err == nil {
				now := time.Now()
				r, err := w.fn.RunnerFor(w.ctx, w.node.ID, wire.RunnerOpen{JobID: c.JobID, Attempt: 1, ScheduledAt: now, CodeFetchedAt: now, ImageReadyAt: now})
				if err == nil {
					return r
				}
			}
		}
		select {
		case <-w.ctx.Done():
			return nil
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// loop claims and answers calls until the container is told to leave or
// the test ends.
func (w *world) loop(t testing.TB, r *functions.Runner, h handler) {
	var done []functions.Outcome
	for w.ctx.Err() == nil {
		now := time.Now()
		got, exit, err := w.fn.Claim(w.ctx, r, functions.ClaimRequest{Max: 8, Wait: 200 * time.Millisecond, Done: done,
			Phases: functions.Phases{ProcessStartedAt: now, ImportedAt: now}})
		if err != nil || exit {
			if err != nil && w.ctx.Err() == nil {
				t.Errorf("claiming: %v", err)
			}
			return
		}
		done = done[:0]
		for _, c := range got {
			done = append(done, w.answer(t, r, c, h))
		}
	}
}

// answer runs h on claimed call c; payloads over the inline limit are
// blobs, both ways.
func (w *world) answer(t testing.TB, r *functions.Runner, c functions.Claimed, h handler) functions.Outcome {
	o := functions.Outcome{TaskID: c.ID, Attempt: c.Attempt, StartedAt: time.Now()}
	data := c.Args.Data
	if c.Args.Blob != "" {
		rc, _, err := w.blobs.OpenForTenant(w.ctx, r.TenantID, c.Args.Blob)
		if err != nil {
			t.Errorf("opening args blob: %v", err)
			return o
		}
		data, _ = io.ReadAll(rc)
		rc.Close()
	}
	var req request
	if err := json.Unmarshal(data, &req); err != nil {
		o.Failure = &functions.Failure{Kind: functions.KindException, Message: "not an envelope: " + err.Error()}
		return o
	}
	resp, exc := h(req)
	o.FinishedAt = time.Now()
	if exc != "" {
		o.Failure = &functions.Failure{Kind: functions.KindException, Message: exc, Traceback: "Traceback…\n" + exc}
		return o
	}
	b, _ := json.Marshal(resp)
	o.Result = &functions.Payload{Data: b}
	if len(b) > functions.InlineLimit {
		h := fmt.Sprintf("%x", sha256.Sum256(b))
		if _, err := w.blobs.Put(r.Context(w.ctx), "payload", h, bytes.NewReader(b), int64(len(b))); err != nil {
			t.Errorf("uploading a result blob: %v", err)
		}
		o.Result = &functions.Payload{Blob: h}
	}
	return o
}

// reply is an HTTP answer read whole.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// apiError is the deployments API's refusal.
type apiError struct {
	Error struct{ Code, Message, Task string } `json:"error"`
}

func (r reply) refusal(t testing.TB) apiError {
	t.Helper()
	var e apiError
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error.Code == "" {
		t.Fatalf("status %d body %q: no refusal (%v)", r.status, r.body, err)
	}
	return e
}

// taskState is the body of a running task's URL.
type taskState struct{ Task, State, URL string }

func (r reply) state(t testing.TB) taskState {
	t.Helper()
	var s taskState
	if err := json.Unmarshal(r.body, &s); err != nil || s.Task == "" {
		t.Fatalf("status %d body %q: no task state (%v)", r.status, r.body, err)
	}
	return s
}

// do sends method path with token ("" for none), headers as name,
// value pairs.
func (w *world) do(t testing.TB, method, path, token string, body []byte, hdr ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, w.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, b}
}

var client = &http.Client{Timeout: hangBound,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// fakeRelay records where WebSockets were relayed, and answers 200. With
// hold set, each relayed request is announced on entered and kept open
// until hold is closed (a caller holding a WebSocket).
type fakeRelay struct {
	mu      sync.Mutex
	dests   []relay.Dest
	paths   []string
	hold    chan struct{}
	entered chan struct{}
}

func (f *fakeRelay) Direct(w http.ResponseWriter, r *http.Request, d relay.Dest) {
	f.mu.Lock()
	f.dests = append(f.dests, d)
	f.paths = append(f.paths, r.URL.Path)
	f.mu.Unlock()
	if f.hold != nil {
		f.entered <- struct{}{}
		select {
		case <-f.hold:
		case <-r.Context().Done():
		}
	}
	_, _ = io.WriteString(w, "relayed")
}

func (f *fakeRelay) last() (relay.Dest, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.dests) == 0 {
		return relay.Dest{}, ""
	}
	return f.dests[len(f.dests)-1], f.paths[len(f.paths)-1]
}

var _ = strings.TrimSpace
