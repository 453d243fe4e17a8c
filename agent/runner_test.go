package agent

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/wire"
)

// namedRuntime is a runtime that only has a name: prepareRunner asks no
// more of it.
type namedRuntime struct{ runtime.Runtime }

func (namedRuntime) Name() string { return wire.RuntimeDocker }

// An agent that restarts listens again on the sockets of the function
// containers it finds running, and removes the runner folders of the
// others.
func TestRecoverRunners(t *testing.T) {
	t.Parallel()
	pkg := makeZip(t, zipEntry{"hello.py", 0o644, "GREETING = 'hi'\n"})
	hash := hashHex(pkg)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(pkg) }))
	defer srv.Close()
	a := testAgent(t, srv.URL)
	a.cfg.Runtime = namedRuntime{}
	prepare := func(job string) *runnerJob {
		m := wire.Start{JobID: job, Attempt: 2, Services: []wire.ServiceStart{{Name: "main"}},
			Runner: &wire.Runner{ContainerID: "ctr_1", FunctionID: "fn_1", CodeHash: hash}}
		spec := runtime.SpecFromStart(m)
		rj, err := a.prepareRunner(context.Background(), m, time.Now(), &spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := spec.Services[0].SystemEnv; len(got) == 0 {
			t.Fatal("no variables for the runner")
		}
		if fi, err := os.Stat(a.runnersRoot()); err != nil || fi.Mode().Perm() != 0o711 {
			t.Errorf("runner root: %v, mode %v; want 0711 (nobody lists it)", err, fi.Mode().Perm())
		}
		return rj
	}
	kept, gone := prepare("job_kept"), prepare("job_gone")
	a.runnerStarted(&task{runner: kept})
	// The agent dies: its sockets close, the folders stay.
	kept.ln.Close()
	gone.ln.Close()

	b := testAgent(t, srv.URL)
	b.cfg.StateDir = a.cfg.StateDir
	got := b.recoverRunners(map[string]int{"job_kept": 2, "job_other": 1})
	rj := got["job_kept"]
	if len(got) != 1 || rj == nil || rj.dir != kept.dir || rj.readyAt.IsZero() || rj.codeAt.IsZero() {
		t.Fatalf("recovered %v; want job_kept in %s with its phases", got, kept.dir)
	}
	defer rj.close()
	if _, err := os.Stat(gone.dir); !os.IsNotExist(err) {
		t.Errorf("the folder of a job not running is still there: %v", err)
	}
	// Served: with no stream tunnel, the connection is taken and closed
	// (the runner tries again).
	c, err := net.Dial("unix", filepath.Join(kept.dir, "run", RunnerSocketName))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil || os.IsTimeout(err) {
		t.Errorf("read = %d, %v; want the connection closed", n, err)
	}
	rj.close()
	if _, err := os.Stat(kept.dir); !os.IsNotExist(err) {
		t.Errorf("the runner folder outlives its job: %v", err)
	}
}

// A state directory too deep for a socket's path still gives function
// containers their socket: the sockets live in a short folder of its own.
func TestRunnerSocketOfDeepStateDir(t *testing.T) {
	t.Parallel()
	pkg := makeZip(t, zipEntry{"hello.py", 0o644, "GREETING = 'hi'\n"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(pkg) }))
	defer srv.Close()
	a := testAgent(t, srv.URL)
	a.cfg.Runtime = namedRuntime{}
	a.cfg.StateDir = filepath.Join(a.cfg.StateDir, strings.Repeat("deep/", 20))
	m := wire.Start{JobID: "job_deep", Attempt: 1, Services: []wire.ServiceStart{{Name: "main"}},
		Runner: &wire.Runner{ContainerID: "ctr_1", FunctionID: "fn_1", CodeHash: hashHex(pkg)}}
	spec := runtime.SpecFromStart(m)
	rj, err := a.prepareRunner(context.Background(), m, time.Now(), &spec)
	if err != nil {
		t.Fatalf("a deep state directory: %v", err)
	}
	defer rj.close()
	defer os.RemoveAll(a.runnersRoot())
	sock := rj.ln.Addr().String()
	if len(sock) > maxSocketPath || strings.HasPrefix(sock, a.cfg.StateDir) {
		t.Fatalf("socket %s (%d bytes)", sock, len(sock))
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}
