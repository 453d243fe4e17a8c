package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/agent/supervise"
	"github.com/levers9/levers9/internal/wire"
)

func TestMain(m *testing.M) {
	// The supervisor of every service, as the agent's binary runs it.
	if len(os.Args) > 1 && os.Args[1] == supervise.Arg {
		os.Exit(supervise.Supervise(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// uidProbe connects to the runner socket as the job's own user (the agent
// closes the connection: there is no stream tunnel in this test) and
// imports the code and the levers9 package.
const uidProbe = `
import os, socket
assert os.getuid() != 0, "runs as root"
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(os.environ["LEVERS9_RUNNER_SOCKET"])
s.close()
assert os.path.isabs(os.environ["LEVERS9_RUNNER_SOCKET"]), os.environ["LEVERS9_RUNNER_SOCKET"]
os.chdir("/")  # absolute paths work from anywhere
import levers9, hello
print("connected as", os.getuid(), hello.GREETING)
`

// On the process runtime with a uid per job, the job's user reaches the
// socket and reads the code and the levers9 package, though the agent's
// state directory is closed to it.
func TestRunnerJobUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("running jobs as uids of their own needs root")
	}
	top, err := os.MkdirTemp("", "levers9-runner-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(top) })
	if err := os.Chmod(top, 0o711); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.NewProcess(runtime.ProcessConfig{Root: filepath.Join(top, "jobs"), UIDs: runtime.UIDRange{First: 1_898_900_000, Count: 4},
		Supervisor: []string{exe, supervise.Arg}, StopGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	pkg := makeZip(t, zipEntry{"hello.py", 0o644, "GREETING = 'hi'\n"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(pkg) }))
	defer srv.Close()
	a := testAgent(t, srv.URL) // its state directory is 0700
	a.cfg.Runtime = rt
	m := wire.Start{JobID: "job_uid", Attempt: 1,
		Services: []wire.ServiceStart{{Name: "main", Command: []string{"python3", "-c", uidProbe}}},
		Runner:   &wire.Runner{ContainerID: "ctr_1", FunctionID: "fn_1", CodeHash: hashHex(pkg)}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	spec := runtime.SpecFromStart(m)
	rj, err := a.prepareRunner(ctx, m, time.Now(), &spec)
	if err != nil {
		t.Fatal(err)
	}
	defer rj.close()
	job, err := rt.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	a.runnerStarted(&task{runner: rj})
	var out []string
	for ev := range job.Events() {
		if l, ok := ev.(runtime.LogEvent); ok {
			out = append(out, l.Text)
		}
	}
	if res := job.Wait(); res.Status != runtime.Complete || !strings.Contains(strings.Join(out, "\n"), "connected as 1898900") {
		t.Errorf("the job user could not use its runner: %s %s; output:\n%s", res.Status, res.Reason, strings.Join(out, "\n"))
	}
}
