package tunnel_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/levers9/levers9/agent"
	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/tunnel"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// hang bounds every wait: it only catches hangs, it measures nothing.
const hang = 90 * time.Second

// world is a server with one tenant, its admin and the agent endpoints.
type world struct {
	db    *database.DB
	bus   *notify.Bus
	jobs  *jobs.Service
	srv   *tunnel.Server
	http  *httptest.Server
	tn    *fixture.Tenant
	admin context.Context
	sys   context.Context
	log   *slog.Logger

	mu       sync.Mutex
	conns    []net.Conn
	sessions sync.WaitGroup
}

func newWorld(t *testing.T, url string) *world {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	db, err := database.Open(ctx, url, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Exclusive(ctx, func() error { return db.Migrate(ctx) }); err != nil {
		t.Fatal(err)
	}
	tn := fixture.NewTenant(t, db, fixture.TenantOptions{Slug: "acme", Name: "Acme"})
	bus := notify.New(db.Pool, log)
	t.Cleanup(bus.Close)
	js := &jobs.Service{DB: db, Log: log, Now: time.Now, Bus: bus,
		Schedule: func(context.Context, *sql.Tx, string) error { return nil }}
	srv := &tunnel.Server{DB: db, Jobs: js, Logs: &joblog.Service{DB: db, Bus: bus, Log: log}, Bus: bus, Log: log, Now: time.Now, HeartbeatInterval: 200 * time.Millisecond,
		Nodes: &nodes.Service{DB: db, Ent: db.Ent, Bus: bus, Log: log, Now: time.Now}}
	mux := http.NewServeMux()
	srv.Routes(mux)
	w := &world{}
	hs := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.sessions.Add(1)
		defer w.sessions.Done()
		mux.ServeHTTP(&tracked{ResponseWriter: rw, w: w}, r)
	}))
	// Sessions end before the database closes and the test completes.
	t.Cleanup(func() { hs.Close(); w.cut(); w.sessions.Wait() })
	*w = world{
		db: db, bus: bus, jobs: js, srv: srv, http: hs, log: log,
		tn: tn, admin: tn.AsAdmin(),
		sys: viewer.SystemContext(ctx),
	}
	return w
}

// tracked records the connections WebSockets take over, so a test can cut
// them as a network failure would.
type tracked struct {
	http.ResponseWriter
	w *world
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

// cut closes every tunnel connection.
func (w *world) cut() {
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

// invite returns a fresh invite code; now shifts the invite's clock.
func (w *world) invite(t *testing.T, now func() time.Time) (string, *ent.NodeInvite) {
	t.Helper()
	if now == nil {
		now = time.Now
	}
	ns := &nodes.Service{Ent: w.db.Ent, Now: now}
	code, inv, err := ns.CreateInvite(w.admin, "", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return code, inv
}

// joinRaw posts a join request and returns the status and decoded body.
func (w *world) joinRaw(t *testing.T, body any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(w.http.URL+"/agent/join", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// startAgent joins a node named name and runs its agent until the test
// ends.
func (w *world) startAgent(t *testing.T, name string) *agent.State {
	t.Helper()
	return w.startAgentWith(t, name, nil)
}

// startAgentWith is startAgent with the agent's configuration changed by
// configure.
func (w *world) startAgentWith(t *testing.T, name string, configure func(*agent.Config)) *agent.State {
	t.Helper()
	code, _ := w.invite(t, nil)
	dir := t.TempDir()
	inv := wire.Inventory{CPUs: 8, MemoryMiB: 16384}
	st, err := agent.Join(context.Background(), agent.JoinConfig{Server: w.http.URL, Invite: code, Name: name, StateDir: dir, Inventory: inv})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, agent.StateFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v, mode %v; want 0600", err, fi.Mode())
	}
	rt, err := runtime.NewProcess(runtime.ProcessConfig{Root: filepath.Join(dir, "jobs"), StopGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		cfg := agent.Config{StateDir: dir, Inventory: inv, Runtime: rt, Log: w.log.With("agent", name)}
		if configure != nil {
			configure(&cfg)
		}
		done <- agent.Run(ctx, cfg)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("agent.Run: %v", err)
			}
		case <-time.After(hang):
			t.Error("agent did not stop")
		}
	})
	w.waitFor(t, "node online", func() bool {
		n, err := w.db.Ent.Node.Get(w.sys, st.NodeID)
		return err == nil && n.Status == node.StatusOnline
	})
	return st
}

// waitFor polls cond until it holds; the bound only catches hangs.
func (w *world) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hang)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runOn submits a job of services and places it on nodeID, as the
// scheduler would.
func (w *world) runOn(t *testing.T, nodeID string, services ...jobspec.Service) *ent.Job {
	t.Helper()
	j, err := w.jobs.Submit(w.admin, jobspec.Job{Name: "t", Queue: tenancy.DefaultQueue, Services: services})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.db.Ent.Service.Update().Where(service.JobID(j.ID)).SetNodeID(nodeID).Exec(w.sys); err != nil {
		t.Fatal(err)
	}
	if err := w.bus.Publish(context.Background(), notify.TopicNode, nodeID); err != nil {
		t.Fatal(err)
	}
	return j
}

// waitEnded waits for job id to end and returns it with its services.
func (w *world) waitEnded(t *testing.T, id string) *ent.Job {
	t.Helper()
	var j *ent.Job
	w.waitFor(t, "job "+id+" to end", func() bool {
		var err error
		j, err = w.db.Ent.Job.Query().Where(job.ID(id)).WithServices().Only(w.sys)
		return err == nil && j.Status != job.StatusPending && j.Status != job.StatusRunning
	})
	return j
}
