package docker

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/dockertest"
)

// TestDockerLimitsAndSecurity checks the container as created (limits,
// security options, labels) and as the service sees it from inside
// (cgroups, privileges).
func TestDockerLimitsAndSecurity(t *testing.T) {
	t.Parallel()
	r := newRuntime(t, func(c *Config) { c.PidsLimit = 123 })
	spec := runtime.JobSpec{ID: randomID("job-"), Attempt: 2, Tenant: "tenant-7", Services: []runtime.ServiceSpec{{
		Name: "inside", CPU: 0.5, MemoryMiB: 64,
		Env: []runtime.EnvVar{{Name: "FROM_SPEC", Value: "yes"}},
		Command: sh(`cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us \
/sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/memory/memory.limit_in_bytes
grep -E '^(NoNewPrivs|CapEff):' /proc/self/status
echo "env FROM_SPEC=$FROM_SPEC job=$LEVERS9_JOB_ID service=$LEVERS9_SERVICE"
echo done; exec sleep 60`),
	}}}
	j := startSpec(t, r, spec)
	e := watch(t, j)
	e.line("inside", "done")

	cli := dockertest.Client(t)
	ctx := context.Background()
	res, err := cli.ContainerInspect(ctx, containerName(spec.ID, 2, "inside"), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Container
	hc := c.HostConfig
	if hc.Privileged || hc.NetworkMode != container.NetworkMode(soloNetwork(r.cfg.NodeID)) ||
		hc.PidMode != "" || hc.IpcMode == "host" || hc.UTSMode != "" || len(hc.CapAdd) != 0 || !slices.Equal(hc.CapDrop, []string{"CAP_NET_RAW"}) ||
		!slices.Equal(hc.SecurityOpt, []string{"no-new-privileges"}) || hc.Init == nil || !*hc.Init || len(hc.Binds) != 0 {
		t.Errorf("host config: privileged=%v network=%s pid=%q ipc=%q uts=%q capAdd=%v capDrop=%v securityOpt=%v init=%v binds=%v",
			hc.Privileged, hc.NetworkMode, hc.PidMode, hc.IpcMode, hc.UTSMode, hc.CapAdd, hc.CapDrop, hc.SecurityOpt, deref2(hc.Init), hc.Binds)
	}
	if hc.NanoCPUs != 5e8 || hc.Memory != 64<<20 || hc.MemorySwap != 64<<20 || hc.PidsLimit == nil || *hc.PidsLimit != 123 || len(hc.DeviceRequests) != 0 {
		t.Errorf("resources: nanoCPUs=%d memory=%d swap=%d pids=%v devices=%v", hc.NanoCPUs, hc.Memory, hc.MemorySwap, hc.PidsLimit, hc.DeviceRequests)
	}
	wantLabels := map[string]string{
		labelNode: r.cfg.NodeID, labelTenant: "tenant-7", labelJob: spec.ID, labelAttempt: "2", labelService: "inside",
	}
	for k, v := range wantLabels {
		if c.Config.Labels[k] != v {
			t.Errorf("container label %s = %q, want %q", k, c.Config.Labels[k], v)
		}
	}
	for _, kv := range c.Config.Env {
		if name, _, _ := strings.Cut(kv, "="); name == "HOME" && kv != "HOME=/root" || strings.Contains(kv, os.Getenv("PATH")) && name != "PATH" {
			t.Errorf("agent environment leaked: %s", kv)
		}
	}
	// A job of one service is on the node's network of such jobs
	// (TestDockerOneServiceJobsShareAnIsolatedNetwork), not its own.
	if _, err := cli.NetworkInspect(ctx, networkName(spec.ID, 2), client.NetworkInspectOptions{}); err == nil {
		t.Errorf("a one-service job has a network of its own")
	}

	j.Stop("seen enough", 0)
	e.end()
	lines := e.lines("inside")
	want := []string{"50000", "100000", "123", "67108864"}
	if len(lines) < 7 || !slices.Equal(lines[:4], want) {
		t.Fatalf("cgroup limits seen inside: %q, want %q first", lines, want)
	}
	// Docker's default set (0xa80425fb) without CAP_NET_RAW (bit 13), not
	// all capabilities (0x1ffffffffff).
	capEff, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(lines[4], "CapEff:")), 16, 64)
	if err != nil || capEff&(1<<13) != 0 || capEff&0x1ffffffffff == 0x1ffffffffff || capEff == 0 {
		t.Errorf("capabilities %q: want Docker's default set without NET_RAW (%v)", lines[4], err)
	}
	if lines[5] != "NoNewPrivs:\t1" {
		t.Errorf("NoNewPrivs line %q", lines[5])
	}
	if want := "env FROM_SPEC=yes job=" + spec.ID + " service=inside"; lines[6] != want {
		t.Errorf("env line %q, want %q", lines[6], want)
	}
	assertRemoved(t, spec.ID)
}

func deref2(p *bool) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestDockerOutOfMemory(t *testing.T) {
	t.Parallel()
	r := newRuntime(t)
	j := start(t, r, runtime.ServiceSpec{
		Name: "hog", MemoryMiB: 16,
		// tail keeps the one endless line in memory.
		Command: sh("head -c 200m /dev/zero | tail"),
	})
	e := watch(t, j)
	res := e.end()
	wantFinal(t, e, "hog", runtime.Failed, 137, "out of memory (limit 16 MiB)")
	wantResult(t, res, runtime.Error, "service hog failed: out of memory (limit 16 MiB)")
	assertRemoved(t, j.ID())
}

func TestDockerMemoryLimitText(t *testing.T) {
	for mib, want := range map[int64]string{8192: "8 GiB", 1024: "1 GiB", 1536: "1536 MiB", 16: "16 MiB"} {
		if got := memoryLimit(mib); got != want {
			t.Errorf("memoryLimit(%d) = %q, want %q", mib, got, want)
		}
	}
}

// TestDockerFilesystemIsTemporary: what a job writes outside its mounts
// is gone with its container; mounts are exactly what the spec gives,
// read-only ones refused by the kernel.
func TestDockerFilesystemIsTemporary(t *testing.T) {
	t.Parallel()
	r := newRuntime(t)
	in, out := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(in, "data.txt"), []byte("input data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mounts := []runtime.Mount{{Path: "/data/in", Dir: in, ReadOnly: true}, {Path: "/data/out", Dir: out}}
	first := startSpec(t, r, runtime.JobSpec{ID: randomID("job-"), Attempt: 1, Mounts: mounts, Services: []runtime.ServiceSpec{{
		Name: "writer", Command: sh(`echo s3cret > /tmp/secret && cat /data/in/data.txt && echo result > /data/out/result.txt &&
if { echo x > /data/in/new; } 2>/dev/null; then echo WROTE; else echo REFUSED; fi`),
	}}})
	e1 := watch(t, first)
	wantResult(t, e1.end(), runtime.Complete, "")
	if got, want := e1.lines("writer"), []string{"input data", "REFUSED"}; !slices.Equal(got, want) {
		t.Errorf("first job wrote %q, want %q", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(out, "result.txt")); err != nil || string(b) != "result\n" {
		t.Errorf("writable mount: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(in, "new")); err == nil {
		t.Error("a read-only mount was written")
	}

	second := start(t, r, runtime.ServiceSpec{Name: "reader", Command: sh("cat /tmp/secret; ls /data 2>&1")})
	e2 := watch(t, second)
	e2.end()
	for _, l := range e2.lines("reader") {
		if strings.Contains(l, "s3cret") {
			t.Errorf("the next job read %q", l)
		}
	}
	wantFinal(t, e2, "reader", runtime.Failed, 1, "exit status 1")
}

// TestDockerGPUs: a service gets a device request for exactly its booked
// devices; without an NVIDIA runtime (as here) it fails saying so.
func TestDockerGPUs(t *testing.T) {
	t.Parallel()
	r := newRuntime(t)
	cli := dockertest.Client(t)
	ctx := context.Background()
	spec := runtime.JobSpec{ID: randomID("job-"), Attempt: 1, Services: []runtime.ServiceSpec{
		{Name: "train", Command: []string{"true"}, GPUs: []string{"GPU-4f1b", "3"}},
		{Name: "cpu", Command: []string{"true"}},
	}}
	// As the runtime creates them, inspected without starting.
	if _, err := cli.NetworkCreate(ctx, networkName(spec.ID, 1), client.NetworkCreateOptions{Labels: jobLabels(r.cfg.NodeID, spec)}); err != nil {
		t.Fatal(err)
	}
	for i, s := range spec.Services {
		opts := createOptions(r.cfg, spec, i, nil, nil)
		created, err := cli.ContainerCreate(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cli.ContainerInspect(ctx, created.ID, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := res.Container.HostConfig.DeviceRequests
		if len(s.GPUs) == 0 {
			if len(got) != 0 {
				t.Errorf("%s without GPUs has device requests %+v", s.Name, got)
			}
			continue
		}
		if len(got) != 1 || got[0].Driver != "nvidia" || !slices.Equal(got[0].DeviceIDs, s.GPUs) || got[0].Count != 0 ||
			len(got[0].Capabilities) != 1 || !slices.Equal(got[0].Capabilities[0], []string{"gpu"}) {
			t.Errorf("%s device requests %+v, want nvidia %v gpu", s.Name, got, s.GPUs)
		}
	}
	if err := r.removeAttempt(ctx, spec.ID, 1); err != nil {
		t.Fatal(err)
	}

	j := startSpec(t, r, spec)
	e := watch(t, j)
	e.end()
	f := e.final("train")
	if f.State != runtime.Failed || !strings.HasPrefix(f.Reason, "starting container: ") || !strings.Contains(f.Reason, "nvidia") {
		t.Errorf("train ended %s %q, want FAILED saying the nvidia driver is missing", f.State, f.Reason)
	}
	t.Logf("without GPUs: %s", f.Reason)
	assertRemoved(t, spec.ID)
}

// TestDockerLongLines: Docker splits long lines into 16 KiB messages; the
// runtime puts them together and splits at MaxLineBytes like the process
// runtime.
func TestDockerLongLines(t *testing.T) {
	t.Parallel()
	r := newRuntime(t)
	j := start(t, r, runtime.ServiceSpec{Name: "long", Command: sh(`head -c 100000 /dev/zero | tr '\0' a; echo; printf 'no newline'`)})
	e := watch(t, j)
	e.end()
	lines := e.lines("long")
	// The split is said, after the line's pieces.
	note := runtime.SplitNote(runtime.Stdout, 100000, 2, runtime.MaxLineBytes)
	if len(lines) != 4 || len(lines[0]) != runtime.MaxLineBytes || len(lines[1]) != 100000-runtime.MaxLineBytes || lines[2] != note || lines[3] != "no newline" {
		lens := make([]int, len(lines))
		for i, l := range lines {
			lens[i] = len(l)
		}
		t.Errorf("line lengths %v, want [%d %d %d 10]", lens, runtime.MaxLineBytes, 100000-runtime.MaxLineBytes, len(note))
	}
}

func TestDockerLineWriter(t *testing.T) {
	t.Parallel()
	type line struct {
		at   time.Time
		text string
	}
	var got []line
	w := &lineWriter{emit: func(at time.Time, text string) { got = append(got, line{at, text}) }}
	t1 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	t2 := t1.Add(time.Millisecond)
	msg := func(at time.Time, text string) {
		if _, err := w.Write([]byte(at.Format(time.RFC3339Nano) + " " + text)); err != nil {
			t.Fatal(err)
		}
	}
	msg(t1, "one\r\n")
	msg(t1, "two \xff\n")
	msg(t1, "part ")
	msg(t2, "of three\n")
	msg(t2, "\n")
	msg(t2, "tail")
	w.flush()
	want := []line{{t1, "one"}, {t1, "two \uFFFD"}, {t1, "part of three"}, {t2, ""}, {t2, "tail"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}

	// Read again from the last message on: only what is newer counts.
	got = nil
	w.skip, w.skipN = w.last, w.atLast
	t3 := t2.Add(time.Nanosecond)
	msg(t2, "of three\n")
	msg(t2, "\n")
	msg(t2, "tail")
	msg(t3, "new\n")
	w.flush()
	if want := []line{{t3, "new"}}; !slices.Equal(got, want) {
		t.Errorf("read again: got %v, want %v", got, want)
	}

	// A read that ended inside a long line: its other pieces carry the same
	// stamp as the ones taken and must not be skipped.
	got = nil
	w = &lineWriter{emit: func(at time.Time, text string) { got = append(got, line{at, text}) }}
	msg(t1, "first ")
	w.skip, w.skipN = w.last, w.atLast
	msg(t1, "first ")
	msg(t1, "piece\n")
	w.flush()
	if want := []line{{t1, "first piece"}}; !slices.Equal(got, want) {
		t.Errorf("read again inside a line: got %v, want %v", got, want)
	}
}
