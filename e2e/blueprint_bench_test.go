package e2e

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/dockertest"
)

// Rounds of the blueprint and sandbox benchmarks.
const (
	benchCachedBuilds = 30
	benchSandboxes    = 10
	benchExecs        = 50
)

// BenchmarkBlueprint measures what a blueprint built already costs when a
// function or sandbox that names it starts (the target: no build
// step runs), on the built-in node's Docker with the Python image (SQLite;
// numbers printed, nothing but "no step built" asserted): the
// buildBlueprint mutation for steps built before (what the SDK sends at
// every deploy or Sandbox.create), p50 of benchCachedBuilds, with the
// steps and build jobs it started (must be 0); the same-run baseline is a
// plain GraphQL query's round trip (viewer) from the same client.
func BenchmarkBlueprint(b *testing.B) {
	image := dockertest.Python(b)
	s, c := functionsServer(b, dbtest.URL(b, "sqlite"), "docker")
	steps := []map[string]any{
		{"kind": "REGISTRY", "ref": image},
		{"kind": "RUN", "commands": []string{"echo bench > /bench"}},
		{"kind": "ENV", "env": []map[string]string{{"name": "BENCH", "value": "1"}}},
	}
	first := awaitBlueprint(b, s.URL, c.Token, buildBlueprint(b, s.URL, c.Token, steps).ID)
	builds := jobCount(b, s.URL, c.Token, "BUILD")

	var cached, viewer []time.Duration
	for range benchCachedBuilds {
		t0 := time.Now()
		got := buildBlueprint(b, s.URL, c.Token, steps)
		cached = append(cached, time.Since(t0))
		if got.ID != first.ID || got.State != "READY" {
			b.Fatalf("the cached blueprint asked for again: %+v; want %s READY", got, first.ID)
		}
		t0 = time.Now()
		var me struct {
			Viewer struct{ User struct{ ID string } }
		}
		gql(b, s.URL, c.Token, `{ viewer { user { id } } }`, nil, &me)
		viewer = append(viewer, time.Since(t0))
	}
	newJobs := jobCount(b, s.URL, c.Token, "BUILD") - builds
	stepsBuilt := 0
	if newJobs != 0 {
		stepsBuilt = -1 // unknown: a build ran, which it must not
		b.Errorf("%d build jobs were submitted for a blueprint built already; want 0", newJobs)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(percentile(cached, 50)), "cached-build-p50-ms")
	b.ReportMetric(ms(percentile(cached, 99)), "cached-build-p99-ms")
	b.ReportMetric(ms(percentile(viewer, 50)), "graphql-viewer-p50-ms")
	b.ReportMetric(float64(newJobs), "build-jobs")
	b.ReportMetric(float64(stepsBuilt), "steps-built")
	b.ReportMetric(float64(first.StepsBuilt), "first-build-steps")
}

// BenchmarkSandbox measures sandboxes on the built-in node's Docker, with
// their blueprint's image on the node already (SQLite; numbers printed):
//
//   - CreateToFirstOutput: from createSandbox to the first byte of `echo
//     hi`'s output through the relay's exec stream (told that it runs by
//     the job's events over SSE, as the SDK waits), p50 over
//     benchSandboxes sandboxes after one to warm up (the target:
//     ≤ 300 ms), with the p50 of each phase (startPhases). Its same-run
//     baseline is `docker run --rm IMAGE echo hi` through the Docker API
//     (create, start, wait; removed after) of the same image: what a
//     container start costs without levers9.
//   - ExecRoundTrip: `true` in a warm sandbox through the relay (WebSocket
//     handshake to the exit frame), p50 of benchExecs; the baseline is
//     the same exec straight through the Docker API (exec create, attach,
//     output to its end) in the sandbox's container.
func BenchmarkSandbox(b *testing.B) {
	image := dockertest.Python(b)
	dc := dockertest.Client(b)
	s, c := functionsServer(b, dbtest.URL(b, "sqlite"), "docker")
	bp := awaitBlueprint(b, s.URL, c.Token, buildBlueprint(b, s.URL, c.Token, []map[string]any{
		{"kind": "REGISTRY", "ref": image},
		{"kind": "RUN", "commands": []string{"echo bench > /bench"}},
	}).ID)
	// A whole core: with a quarter, CFS throttling of the container's
	// cgroup shows in every exec (docker exec included).
	in := map[string]any{"blueprint": bp.ID, "cpu": 1, "memoryMiB": 256}

	b.Run("CreateToFirstOutput", func(b *testing.B) {
		var created []startPhases
		var direct []time.Duration
		for i := range benchSandboxes + 1 {
			ph := createToFirstOutput(b, s.URL, c.Token, in)
			if i > 0 { // the first warms up
				created = append(created, ph)
			}
			direct = append(direct, dockerRun(b, dc, bp.Image))
		}
		b.ReportMetric(0, "ns/op")
		reportPhases(b, created)
		b.ReportMetric(ms(percentile(direct[1:], 50)), "docker-run-p50-ms")
	})

	b.Run("ExecRoundTrip", func(b *testing.B) {
		sb := createSandbox(b, s.URL, c.Token, in)
		defer terminate(b, s.URL, c.Token, sb)
		awaitSandbox(b, s.URL, c.Token, sb)
		ctx, cancel := context.WithTimeout(context.Background(), fnTimeout)
		defer cancel()
		id := sandboxContainer(ctx, b, dc, sb)
		var relayed, direct []time.Duration
		for i := range benchExecs + 5 {
			t0 := time.Now()
			r, err := sandboxExec(ctx, s.URL, c.Token, sb, nil, "true")
			d := time.Since(t0)
			if err != nil || r.Exit != 0 {
				b.Fatalf("exec true: %v, %+v", err, r)
			}
			t0 = time.Now()
			if err := dockerExec(ctx, dc, id, "true"); err != nil {
				b.Fatal(err)
			}
			if i >= 5 { // warm-up: connections, caches
				relayed, direct = append(relayed, d), append(direct, time.Since(t0))
			}
		}
		b.ReportMetric(0, "ns/op")
		b.ReportMetric(ms(percentile(relayed, 50)), "exec-p50-ms")
		b.ReportMetric(ms(percentile(relayed, 99)), "exec-p99-ms")
		b.ReportMetric(ms(percentile(direct, 50)), "docker-exec-p50-ms")
	})
}

// startPhases is where one sandbox's create → first output went, each
// phase's end measured from the createSandbox request's start (the
// server's timestamps and the client's clock are the same machine's):
// the mutation's answer, the Start sent to the node (submitted, placed,
// dispatched: the service's dispatchedAt), the node's RUNNING report
// stored (startedAt), the client told so (the jobEvents push) and the
// first byte of `echo hi`'s output (the exec stream's handshake and the
// runtime's exec).
type startPhases struct {
	answered, dispatched, started, told, output time.Duration
}

// createToFirstOutput creates a sandbox, waits for it to run as the SDK
// does (the job's events pushed over SSE, not a polling tick), runs `echo
// hi` in it and returns where the time went up to the output's first
// byte; the sandbox is terminated after.
func createToFirstOutput(b *testing.B, base, token string, in map[string]any) startPhases {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fnTimeout)
	defer cancel()
	t0 := time.Now()
	sb := createSandbox(b, base, token, in)
	var ph startPhases
	ph.answered = time.Since(t0)
	defer terminate(b, base, token, sb)
	running := false
	subscribe(b, base, token, `subscription($id: ID!) { jobEvents(jobId: $id) { service status } }`,
		map[string]any{"id": sb}, func(data []byte) bool {
			var ev struct {
				Data struct {
					JobEvents struct {
						Service *string
						Status  string
					}
				}
			}
			if json.Unmarshal(data, &ev) != nil {
				return true
			}
			// The job's own events (no service): RUNNING once its one
			// service runs, or its end.
			e := ev.Data.JobEvents
			if e.Service != nil && *e.Service != "" || e.Status == "PENDING" {
				return true
			}
			running = e.Status == "RUNNING"
			return false
		})
	ph.told = time.Since(t0)
	if !running {
		logJob(b, base, token, sb)
		b.Fatalf("sandbox %s ended before it ran: %+v", sb, sandboxJob(b, base, token, sb))
	}
	r, err := sandboxExec(ctx, base, token, sb, nil, "echo", "hi")
	if err != nil || r.Exit != 0 || r.Stdout != "hi\n" || r.FirstOutput == 0 {
		b.Fatalf("echo hi in sandbox %s: %v, %+v", sb, err, r)
	}
	ph.output = ph.told + r.FirstOutput
	var times struct {
		Node struct {
			Services []struct{ DispatchedAt, StartedAt time.Time }
		}
	}
	gql(b, base, token, `query($id: ID!) { node(id: $id) { ... on Job { services { dispatchedAt startedAt } } } }`,
		map[string]any{"id": sb}, &times)
	if svc := times.Node.Services; len(svc) == 1 {
		ph.dispatched, ph.started = svc[0].DispatchedAt.Sub(t0), svc[0].StartedAt.Sub(t0)
	}
	return ph
}

// reportPhases reports the p50 of each phase's length (not of its end).
func reportPhases(b *testing.B, phs []startPhases) {
	b.Helper()
	var answered, placed, node, told, exec, total []time.Duration
	for _, p := range phs {
		answered = append(answered, p.answered)
		placed = append(placed, p.dispatched)
		node = append(node, p.started-p.dispatched)
		told = append(told, p.told-p.started)
		exec = append(exec, p.output-p.told)
		total = append(total, p.output)
	}
	b.ReportMetric(ms(percentile(total, 50)), "create-to-output-p50-ms")
	b.ReportMetric(ms(percentile(total, 99)), "create-to-output-max-ms")
	b.ReportMetric(ms(percentile(answered, 50)), "phase-create-answered-p50-ms")
	b.ReportMetric(ms(percentile(placed, 50)), "phase-to-dispatched-p50-ms")
	b.ReportMetric(ms(percentile(node, 50)), "phase-node-start-p50-ms")
	b.ReportMetric(ms(percentile(told, 50)), "phase-running-told-p50-ms")
	b.ReportMetric(ms(percentile(exec, 50)), "phase-exec-first-byte-p50-ms")
}

// dockerRun is `docker run --rm image echo hi` through the API: the time
// from create to the container's exit (then it is removed).
func dockerRun(b *testing.B, dc *client.Client, image string) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t0 := time.Now()
	res, err := dc.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: image, Cmd: []string{"echo", "hi"}, Labels: map[string]string{"levers9.bench": "1"}},
	})
	if err != nil {
		b.Fatalf("docker create %s: %v", image, err)
	}
	defer func() {
		_, _ = dc.ContainerRemove(context.Background(), res.ID, client.ContainerRemoveOptions{Force: true})
	}()
	wait := dc.ContainerWait(ctx, res.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := dc.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		b.Fatalf("docker start: %v", err)
	}
	select {
	case <-wait.Result:
	case err := <-wait.Error:
		b.Fatalf("docker wait: %v", err)
	}
	return time.Since(t0)
}

// sandboxContainer is the ID of sandbox job's container.
func sandboxContainer(ctx context.Context, b *testing.B, dc *client.Client, job string) string {
	b.Helper()
	cs, err := dc.ContainerList(ctx, client.ContainerListOptions{Filters: client.Filters{}.Add("label", "levers9.job="+job)})
	if err != nil || len(cs.Items) != 1 {
		b.Fatalf("the container of sandbox %s: %v, %d found", job, err, len(cs.Items))
	}
	return cs.Items[0].ID
}

// dockerExec runs cmd in container id through the Docker API and reads
// its output to the end.
func dockerExec(ctx context.Context, dc *client.Client, id string, cmd ...string) error {
	created, err := dc.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return fmt.Errorf("docker exec create: %w", err)
	}
	att, err := dc.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return fmt.Errorf("docker exec attach: %w", err)
	}
	defer att.Close()
	_, err = io.Copy(io.Discard, att.Reader)
	return err
}

// BenchmarkSandboxVenv measures a sandbox on the process runtime: of a
// blueprint of a base and a PIP step (blueprints.Venv), whose virtual
// environment the built-in node has already built (the first sandbox
// builds it, and is not counted), on SQLite; numbers printed. The
// blueprint is built as every blueprint is, on Docker (the server starts
// first with its built-in node on Docker), then the same server and node
// run on the process runtime. Nothing reaches a package index: the wheels
// are made here, found by the images' pip (its environment) and by the
// node's pip (the pip.conf in its HOME, as an operator without an index
// would write).
//
//   - create-to-output: as in BenchmarkSandbox, `echo hi` in the sandbox;
//     the same-run baseline is spawning `echo hi` here (fork, exec, the
//     first byte of its output through a pipe).
func BenchmarkSandboxVenv(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("the process runtime runs a sandbox as a job user: needs root")
	}
	if err := exec.Command("python3", "-c", "import venv, ensurepip").Run(); err != nil {
		b.Skip("the node's python3 has no venv and ensurepip:", err)
	}
	dc := dockertest.Client(b)
	wheels := benchWheels(b)
	base := venvBaseImage(b, dc, wheels)
	home := b.TempDir()
	pipConf := "[global]\nno-index = true\nfind-links = " + wheels + "\n"
	if err := os.MkdirAll(filepath.Join(home, ".config", "pip"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".config", "pip", "pip.conf"), []byte(pipConf), 0o644); err != nil {
		b.Fatal(err)
	}
	dir, url := shortTempDir(b), dbtest.URL(b, "sqlite")

	s := startServer(b, dir, url, "LEVERS9_LOCAL_NODE_RUNTIME=docker")
	c := s.credentials()
	var me struct {
		Viewer struct{ User struct{ ID string } }
	}
	gql(b, s.URL, c.Token, `{ viewer { user { id } } }`, nil, &me)
	gql(b, s.URL, c.Token, `mutation($u: ID!) { grantTokens(input: {userID: $u, tokens: 100000, reason: "e2e"}) { id } }`,
		map[string]any{"u": me.Viewer.User.ID}, new(map[string]any))
	waitLocalNode(b, s.URL, c.Token)
	bp := awaitBlueprint(b, s.URL, c.Token, buildBlueprint(b, s.URL, c.Token, []map[string]any{
		{"kind": "REGISTRY", "ref": base},
		{"kind": "PIP", "packages": []string{"levers9-bench==1.0"}},
	}).ID)
	s.stop()

	s = startServer(b, dir, url, "LEVERS9_LOCAL_NODE_RUNTIME=process", "HOME="+home)
	b.Cleanup(s.stop)
	waitLocalNode(b, s.URL, c.Token)
	in := map[string]any{"blueprint": bp.ID, "cpu": 1, "memoryMiB": 256}

	// The first builds the environment; it runs the package's code.
	sb := createSandbox(b, s.URL, c.Token, in)
	awaitSandbox(b, s.URL, c.Token, sb)
	if out := execOK(b, s.URL, c.Token, sb, "python", "-c", "import levers9_bench; print(levers9_bench.X)"); out != "from the wheel\n" {
		b.Fatalf("the sandbox's python printed %q, want the package's X", out)
	}
	terminate(b, s.URL, c.Token, sb)

	var created []startPhases
	var direct []time.Duration
	for range benchSandboxes {
		created = append(created, createToFirstOutput(b, s.URL, c.Token, in))
		direct = append(direct, spawnFirstOutput(b, "echo", "hi"))
	}
	b.ReportMetric(0, "ns/op")
	reportPhases(b, created)
	b.ReportMetric(ms(percentile(direct, 50)), "spawn-p50-ms")
}

// spawnFirstOutput starts cmd here and returns the time to the first byte
// of its output; it waits for its end.
func spawnFirstOutput(b *testing.B, cmd ...string) time.Duration {
	b.Helper()
	c := exec.Command(cmd[0], cmd[1:]...)
	out, err := c.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if err := c.Start(); err != nil {
		b.Fatal(err)
	}
	one := make([]byte, 1)
	if _, err := io.ReadFull(out, one); err != nil {
		b.Fatalf("%v: no output: %v", cmd, err)
	}
	d := time.Since(t0)
	_, _ = io.Copy(io.Discard, out)
	if err := c.Wait(); err != nil {
		b.Fatalf("%v: %v", cmd, err)
	}
	return d
}

// benchWheels is a folder, readable by all, holding a pure-Python wheel of
// package levers9_bench (X is "from the wheel") and this machine's pip
// wheel (for the image's pip: it has none).
func benchWheels(b *testing.B) string {
	b.Helper()
	pips, _ := filepath.Glob("/usr/share/python-wheels/pip-*-py3-none-any.whl")
	if len(pips) == 0 {
		b.Skip("no pip wheel in /usr/share/python-wheels (apt-get install python3-pip-whl)")
	}
	dir, err := os.MkdirTemp("", "l9wheels-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	pip, err := os.ReadFile(pips[0])
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(pips[0])), pip, 0o644); err != nil {
		b.Fatal(err)
	}
	var whl bytes.Buffer
	z := zip.NewWriter(&whl)
	for _, f := range []struct{ name, body string }{
		{"levers9_bench/__init__.py", "X = 'from the wheel'\n"},
		{"levers9_bench-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: levers9-bench\nVersion: 1.0\n"},
		{"levers9_bench-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: levers9-e2e\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
		{"levers9_bench-1.0.dist-info/RECORD", "levers9_bench/__init__.py,,\nlevers9_bench-1.0.dist-info/METADATA,,\n" +
			"levers9_bench-1.0.dist-info/WHEEL,,\nlevers9_bench-1.0.dist-info/RECORD,,\n"},
	} {
		w, err := z.Create(f.name)
		if err == nil {
			_, err = w.Write([]byte(f.body))
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "levers9_bench-1.0-py3-none-any.whl"), whl.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// venvBaseImage is the Python test image with pip and the wheels of
// wheels, its pip told to install from them only: a base whose PIP steps
// build without a package index.
func venvBaseImage(b *testing.B, dc *client.Client, wheels string) string {
	b.Helper()
	const tag = "levers9-test-python-pip:bench"
	python := dockertest.Python(b)
	files := map[string][]byte{}
	entries, err := os.ReadDir(wheels)
	if err != nil {
		b.Fatal(err)
	}
	var pip string
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(wheels, e.Name()))
		if err != nil {
			b.Fatal(err)
		}
		files["wheels/"+e.Name()] = data
		if strings.HasPrefix(e.Name(), "pip-") {
			pip = "/wheels/" + e.Name()
		}
	}
	files["Dockerfile"] = []byte("FROM " + python + "\nCOPY wheels/ /wheels/\n" +
		"ENV PIP_NO_INDEX=1 PIP_FIND_LINKS=/wheels PIP_BREAK_SYSTEM_PACKAGES=1 PIP_DISABLE_PIP_VERSION_CHECK=1\n" +
		`RUN ["python3", "` + pip + `/pip", "install", "--no-cache-dir", "` + pip + `"]` + "\n")
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0)}); err != nil {
			b.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			b.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := dc.ImageBuild(ctx, &ctxTar, client.ImageBuildOptions{Tags: []string{tag}, Remove: true, ForceRemove: true, Version: build.BuilderV1})
	if err != nil {
		b.Fatalf("building %s: %v", tag, err)
	}
	defer res.Body.Close()
	if err := dockertest.ReadBuild(res.Body); err != nil {
		b.Fatalf("building %s: %v", tag, err)
	}
	return tag
}
