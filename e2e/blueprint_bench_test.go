package e2e

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

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
//     hi`'s output through the relay's exec stream (polling the job's
//     status every 10 ms until it runs, as the SDK waits), p50 over
//     benchSandboxes sandboxes after one to warm up (the target:
//     ≤ 300 ms). Its same-run baseline is `docker run --rm IMAGE echo hi`
//     through the Docker API (create, start, wait, remove) of the same
//     image: what a container start costs without levers9.
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
		var created, direct []time.Duration
		for i := range benchSandboxes + 1 {
			d := createToFirstOutput(b, s.URL, c.Token, in)
			if i > 0 { // the first warms up
				created = append(created, d)
			}
			direct = append(direct, dockerRun(b, dc, bp.Image))
		}
		b.ReportMetric(0, "ns/op")
		b.ReportMetric(ms(percentile(created, 50)), "create-to-output-p50-ms")
		b.ReportMetric(ms(percentile(created, 99)), "create-to-output-max-ms")
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

// createToFirstOutput creates a sandbox, waits for it to run, runs `echo
// hi` in it and returns the time from the mutation to the output's first
// byte; the sandbox is terminated after.
func createToFirstOutput(b *testing.B, base, token string, in map[string]any) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fnTimeout)
	defer cancel()
	t0 := time.Now()
	sb := createSandbox(b, base, token, in)
	defer terminate(b, base, token, sb)
	for {
		j := sandboxJob(b, base, token, sb)
		if j.Status == "RUNNING" && len(j.Services) == 1 && j.Services[0].Status == "RUNNING" {
			break
		}
		if j.Status != "PENDING" && j.Status != "RUNNING" || time.Since(t0) > fnTimeout {
			logJob(b, base, token, sb)
			b.Fatalf("sandbox %s: %+v", sb, j)
		}
		time.Sleep(10 * time.Millisecond)
	}
	before := time.Since(t0)
	r, err := sandboxExec(ctx, base, token, sb, nil, "echo", "hi")
	if err != nil || r.Exit != 0 || r.Stdout != "hi\n" || r.FirstOutput == 0 {
		b.Fatalf("echo hi in sandbox %s: %v, %+v", sb, err, r)
	}
	return before + r.FirstOutput
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
