package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/agent/runtime/docker"
	"github.com/levers9/levers9/internal/dockertest"
	"github.com/levers9/levers9/internal/wire"
)

// On Docker a function's container gets its code and the levers9 package
// bound read-only and the socket's folder bound, at the paths the runner
// expects, with absolute paths in its variables. Needs a Docker daemon:
// go run ./internal/dockertest/withdocker -- go test ./agent -run TestRunnerDocker
func TestRunnerDocker(t *testing.T) {
	t.Parallel()
	cli, err := dockertest.NewClient()
	if err == nil {
		err = dockertest.Ping(context.Background(), cli)
		_ = cli.Close()
	}
	if err != nil {
		t.Skipf("no Docker daemon (%v): run through go run ./internal/dockertest/withdocker", err)
	}
	pkg := makeZip(t, zipEntry{"hello.py", 0o644, "GREETING = 'hi'\n"})
	hash := hashHex(pkg)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/agent/code/"+hash {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(pkg)
	}))
	defer srv.Close()
	var id [6]byte
	_, _ = rand.Read(id[:])
	node := "node-" + hex.EncodeToString(id[:])
	rt, err := docker.New(context.Background(), docker.Config{NodeID: node, DefaultImage: dockertest.Busybox(t), StopGrace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = rt.Close()
		// Whatever a failed test left goes (labelled with its node).
		cli := dockertest.Client(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		f := client.Filters{}.Add("label", "levers9.node="+node)
		if cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f}); err == nil {
			for _, c := range cs.Items {
				_, _ = cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true})
			}
		}
		if ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f}); err == nil {
			for _, n := range ns.Items {
				_, _ = cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{})
			}
		}
	})
	a := testAgent(t, srv.URL)
	a.cfg.Runtime = rt
	const script = `test -S /levers9/run/runner.sock &&
test -f /levers9/sdk/levers9/__init__.py &&
grep -q GREETING /levers9/code/hello.py &&
! touch /levers9/code/new 2>/dev/null &&
[ "$LEVERS9_RUNNER_SOCKET" = /levers9/run/runner.sock ] &&
[ "$PYTHONPATH" = /levers9/sdk:/levers9/code ] &&
[ "$LEVERS9_CONTAINER_ID" = ctr_1 ] && echo all there`
	m := wire.Start{JobID: "job-" + hex.EncodeToString(id[:]), Attempt: 1,
		Services: []wire.ServiceStart{{Name: "main", Command: []string{"sh", "-c", script}, CPU: 0.5, MemoryMiB: 64}},
		Runner:   &wire.Runner{ContainerID: "ctr_1", FunctionID: "fn_1", CodeHash: hash}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	spec := runtime.SpecFromStart(m)
	rj, err := a.prepareRunner(ctx, m, time.Now(), &spec)
	if err != nil {
		t.Fatal(err)
	}
	job, err := rt.Start(ctx, spec)
	if err != nil {
		rj.close()
		t.Fatal(err)
	}
	var out []string
	for ev := range job.Events() {
		if l, ok := ev.(runtime.LogEvent); ok {
			out = append(out, l.Text)
		}
	}
	res := job.Wait()
	rj.close()
	if res.Status != runtime.Complete || !strings.Contains(strings.Join(out, "\n"), "all there") {
		t.Errorf("the container did not find everything: %s %s; output:\n%s", res.Status, res.Reason, strings.Join(out, "\n"))
	}
	if _, err := os.Stat(rj.dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the container's runner folder outlives it: %v", err)
	}
}
