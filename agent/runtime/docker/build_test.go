package docker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/dockertest"
	"github.com/levers9/levers9/internal/wire"
)

// keyed sets the steps' keys the way the server does: each the hash of the
// previous key and the step.
func keyed(steps ...wire.BuildStep) []wire.BuildStep {
	prev := "levers9-blueprint-v1"
	out := make([]wire.BuildStep, len(steps))
	for i, s := range steps {
		s.Key = ""
		j, _ := json.Marshal(s)
		sum := sha256.Sum256([]byte(prev + "\n" + string(j)))
		s.Key = hex.EncodeToString(sum[:])
		prev, out[i] = s.Key, s
	}
	return out
}

// uploads records what builds uploaded.
type uploads struct {
	mu    sync.Mutex
	tars  map[string][]byte
	built map[string]int
}

func (u *uploads) upload(_ context.Context, key string, tar io.Reader, built int) error {
	b, err := io.ReadAll(tar)
	if err != nil {
		return err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.tars == nil {
		u.tars, u.built = map[string][]byte{}, map[string]int{}
	}
	u.tars[key], u.built[key] = b, built
	return nil
}

func (u *uploads) get(key string) ([]byte, int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.tars[key], u.built[key]
}

// codeDirs serves COPY steps' files from folders named by hash.
func codeDirs(dirs map[string]string) func(context.Context, string) (string, error) {
	return func(_ context.Context, hash string) (string, error) {
		if d, ok := dirs[hash]; ok {
			return d, nil
		}
		return "", errors.New("no such code package")
	}
}

// runBuild builds b and returns the events and result.
func runBuild(t *testing.T, r *Runtime, spec runtime.BuildSpec) (*events, runtime.Result) {
	t.Helper()
	if spec.ID == "" {
		spec.ID = randomID("build-")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	j, err := r.Build(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	e := watch(t, j)
	return e, e.end()
}

// removeRepository removes every image of repo (a test's own).
func removeRepository(t *testing.T, repo string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli := dockertest.Client(t)
	res, err := cli.ImageList(ctx, client.ImageListOptions{Filters: client.Filters{}.Add("reference", repo)})
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range res.Items {
		for _, tag := range im.RepoTags {
			if _, err := cli.ImageRemove(ctx, tag, client.ImageRemoveOptions{Force: true, PruneChildren: true}); err != nil {
				t.Fatalf("removing %s: %v", tag, err)
			}
		}
	}
}

func loadTar(t *testing.T, r *Runtime, tar []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := r.loadImage(ctx, bytes.NewReader(tar)); err != nil {
		t.Fatal(err)
	}
}

// runOnce runs cmd in image and returns its output lines.
func runOnce(t *testing.T, r *Runtime, image string, cmd ...string) []string {
	t.Helper()
	e := watch(t, start(t, r, runtime.ServiceSpec{Name: "main", Image: image, Command: cmd}))
	res := e.end()
	if res.Status != runtime.Complete {
		t.Fatalf("running %s: %s %s\n%s", image, res.Status, res.Reason, e)
	}
	return e.lines("main")
}

func testSteps(t *testing.T, greeting string) ([]wire.BuildStep, func(context.Context, string) (string, error)) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "hello.txt"), []byte("hello from the zip\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code := strings.Repeat("c", 64)
	return keyed(
		wire.BuildStep{Kind: wire.StepRegistry, Ref: dockertest.Busybox(t)},
		wire.BuildStep{Kind: wire.StepRun, Commands: []string{"echo one > /one.txt", `echo "it's built"`}},
		wire.BuildStep{Kind: wire.StepCopy, Code: code, Path: "/app"},
		wire.BuildStep{Kind: wire.StepEnv, Env: []wire.EnvVar{{Name: "GREETING", Value: greeting}}},
	), codeDirs(map[string]string{code: dir})
}

func stepLines(lines []string) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, "step ") && (strings.HasSuffix(l, "(cached)") || strings.HasSuffix(l, "(building)")) {
			out = append(out, l[:strings.IndexByte(l[5:], ' ')+5]+" "+l[strings.LastIndexByte(l, '('):])
		}
	}
	return out
}

// A build runs every step; a rebuild with the last step changed runs only
// that one; the uploaded tar brings the image back after it was removed,
// and it runs.
func TestDockerBuildStepsCachedAndExported(t *testing.T) {
	t.Parallel()
	r := newRuntime(t)
	repo := "levers9-bp/" + randomID("t")
	t.Cleanup(func() { removeRepository(t, repo) })
	var up uploads

	steps, code := testSteps(t, "hi $USER \"quoted\"")
	b := wire.Build{Blueprint: "bp_1", Repository: repo, Steps: steps}
	e, res := runBuild(t, r, runtime.BuildSpec{Build: b, Code: code, Upload: up.upload, Service: runtime.ServiceSpec{Name: "build", CPU: 1, MemoryMiB: 256}})
	if res.Status != runtime.Complete {
		t.Fatalf("first build: %s %s\n%s", res.Status, res.Reason, e)
	}
	if got := e.states("build"); !slices.Equal(got, []runtime.State{runtime.Starting, runtime.Running, runtime.Exited}) {
		t.Errorf("states %v", got)
	}
	if got, want := stepLines(e.lines("build")), []string{"step 1/4 (building)", "step 2/4 (building)", "step 3/4 (building)", "step 4/4 (building)"}; !slices.Equal(got, want) {
		t.Errorf("step lines %q, want %q", got, want)
	}
	if !slices.Contains(e.lines("build"), "it's built") {
		t.Errorf("the RUN step's output is not in the log:\n%s", e)
	}
	// The steps ran on the build's own network, removed at the end.
	if ns, err := r.cli.NetworkList(context.Background(), client.NetworkListOptions{Filters: client.Filters{}.Add("label", labelNode+"="+r.cfg.NodeID)}); err != nil || len(ns.Items) != 0 {
		t.Errorf("networks left: %v %v", ns.Items, err)
	}
	if _, built := up.get(steps[3].Key); built != 4 {
		t.Errorf("first build: %d steps built, want 4", built)
	}
	if got := runOnce(t, r, b.Image(3), "sh", "-c", `echo "$GREETING"`); !slices.Equal(got, []string{`hi $USER "quoted"`}) {
		t.Errorf("ENV value came out as %q", got)
	}

	steps2, code2 := testSteps(t, "changed")
	b.Steps = steps2
	if steps2[2].Key != steps[2].Key || steps2[3].Key == steps[3].Key {
		t.Fatal("keys do not chain as expected")
	}
	e, res = runBuild(t, r, runtime.BuildSpec{Build: b, Code: code2, Upload: up.upload})
	if res.Status != runtime.Complete {
		t.Fatalf("rebuild: %s %s\n%s", res.Status, res.Reason, e)
	}
	if got, want := stepLines(e.lines("build")), []string{"step 1/4 (cached)", "step 2/4 (cached)", "step 3/4 (cached)", "step 4/4 (building)"}; !slices.Equal(got, want) {
		t.Errorf("rebuild step lines %q, want %q", got, want)
	}
	tar, built := up.get(steps2[3].Key)
	if built != 1 {
		t.Errorf("rebuild: %d steps built, want 1", built)
	}

	removeRepository(t, repo)
	final := b.Image(3)
	if ok, _ := r.hasImage(context.Background(), final); ok {
		t.Fatal("the image is still there after removing it")
	}
	loadTar(t, r, tar)
	for i := range steps2 {
		if ok, _ := r.hasImage(context.Background(), b.Image(i)); !ok {
			t.Errorf("step %d's image is not in the export", i+1)
		}
	}
	got := runOnce(t, r, final, "sh", "-c", `cat /one.txt /app/sub/hello.txt; echo "$GREETING"`)
	if want := []string{"one", "hello from the zip", "changed"}; !slices.Equal(got, want) {
		t.Errorf("the built image printed %q, want %q", got, want)
	}
}

// saveTar is the `docker save` tar of refs, from the daemon.
func saveTar(t *testing.T, refs ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	rc, err := dockertest.Client(t).ImageSave(ctx, refs)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeServer serves exported images by key, as GET /agent/images/KEY does.
type fakeServer struct {
	mu    sync.Mutex
	tars  map[string][]byte
	calls []string // "JOB KEY"
}

func (f *fakeServer) fetch(_ context.Context, jobID, ref string) (io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := blueprintKey(ref)
	f.calls = append(f.calls, jobID+" "+key)
	b, ok := f.tars[key]
	if !ok {
		return nil, errors.New("server refused (404): not found")
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (f *fakeServer) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// A job whose image is a blueprint's the node lacks loads it from the
// server (once, for jobs starting together) instead of pulling it.
func TestDockerBuildEnsureImageLoadsBlueprint(t *testing.T) {
	t.Parallel()
	r := newRuntime(t)
	repo := "levers9-bp/" + randomID("t")
	t.Cleanup(func() { removeRepository(t, repo) })
	var up uploads
	steps := keyed(
		wire.BuildStep{Kind: wire.StepRegistry, Ref: dockertest.Busybox(t)},
		wire.BuildStep{Kind: wire.StepRun, Commands: []string{"echo loaded > /marker"}},
	)
	b := wire.Build{Blueprint: "bp_2", Repository: repo, Steps: steps}
	if e, res := runBuild(t, r, runtime.BuildSpec{Build: b, Upload: up.upload}); res.Status != runtime.Complete {
		t.Fatalf("build: %s %s\n%s", res.Status, res.Reason, e)
	}
	tar, _ := up.get(steps[1].Key)
	removeRepository(t, repo)

	srv := &fakeServer{tars: map[string][]byte{steps[1].Key: tar}}
	r.SetImageFetcher(srv.fetch)
	var wg sync.WaitGroup
	outs := make([][]string, 3)
	var loadings atomic.Int32 // jobs that waited for the load (one that starts after it does not)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := watch(t, start(t, r, runtime.ServiceSpec{Name: "main", Image: b.Image(1), Command: sh("cat /marker")}))
			if res := e.end(); res.Status != runtime.Complete {
				t.Errorf("job %d: %s %s\n%s", i, res.Status, res.Reason, e)
			}
			loading := false
			for _, ev := range e.all {
				if s, ok := ev.(runtime.StateEvent); ok && s.Reason == "loading blueprint image "+b.Image(1) {
					loading = true
				}
			}
			if loading {
				loadings.Add(1)
			}
			outs[i] = e.lines("main")
		}()
	}
	wg.Wait()
	for i, o := range outs {
		if !slices.Equal(o, []string{"loaded"}) {
			t.Errorf("job %d printed %q", i, o)
		}
	}
	if loadings.Load() == 0 {
		t.Error("no job reported loading the image")
	}
	if n := srv.callCount(); n != 1 {
		t.Errorf("the image was fetched %d times, want once", n)
	}

	// A blueprint image the server does not give is a clear failure, not a pull.
	e := watch(t, start(t, r, runtime.ServiceSpec{Name: "main", Image: repo + ":" + strings.Repeat("0", 64), Command: sh("true")}))
	res := e.end()
	if res.Status != runtime.Error || !strings.Contains(res.Reason, "fetching blueprint image") {
		t.Errorf("missing blueprint: %s %q", res.Status, res.Reason)
	}
}

// A build whose first steps another blueprint's export holds loads it and
// builds only the rest.
func TestDockerBuildLoadsCachedSteps(t *testing.T) {
	t.Parallel()
	r := newRuntime(t)
	repo := "levers9-bp/" + randomID("t")
	t.Cleanup(func() { removeRepository(t, repo) })
	var up uploads
	steps, code := testSteps(t, "first")
	b := wire.Build{Blueprint: "bp_3", Repository: repo, Steps: steps[:3]}
	if e, res := runBuild(t, r, runtime.BuildSpec{Build: b, Code: code, Upload: up.upload}); res.Status != runtime.Complete {
		t.Fatalf("build: %s %s\n%s", res.Status, res.Reason, e)
	}
	tar, _ := up.get(steps[2].Key)
	removeRepository(t, repo)

	srv := &fakeServer{tars: map[string][]byte{steps[2].Key: tar}}
	r.SetImageFetcher(srv.fetch)
	b = wire.Build{Blueprint: "bp_4", Repository: repo, Steps: steps, Cached: steps[2].Key, CachedStep: 2}
	e, res := runBuild(t, r, runtime.BuildSpec{ID: "build-cached", Build: b, Code: code, Upload: up.upload})
	if res.Status != runtime.Complete {
		t.Fatalf("build: %s %s\n%s", res.Status, res.Reason, e)
	}
	if got, want := stepLines(e.lines("build")), []string{"step 1/4 (cached)", "step 2/4 (cached)", "step 3/4 (cached)", "step 4/4 (building)"}; !slices.Equal(got, want) {
		t.Errorf("step lines %q, want %q", got, want)
	}
	if _, built := up.get(steps[3].Key); built != 1 {
		t.Errorf("%d steps built, want 1", built)
	}
	if want := []string{"build-cached " + steps[2].Key}; !slices.Equal(srv.calls, want) {
		t.Errorf("fetched %q, want %q", srv.calls, want)
	}
}

// Stopping a build fails it with the reason; a failing step fails it with
// the step's error.
func TestDockerBuildStopAndFailure(t *testing.T) {
	t.Parallel()
	r := newRuntime(t)
	repo := "levers9-bp/" + randomID("t")
	t.Cleanup(func() { removeRepository(t, repo) })
	var up uploads
	b := wire.Build{Blueprint: "bp_5", Repository: repo, Steps: keyed(
		wire.BuildStep{Kind: wire.StepRegistry, Ref: dockertest.Busybox(t)},
		wire.BuildStep{Kind: wire.StepRun, Commands: []string{"echo sleeping", "sleep 60"}},
	)}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	j, err := r.Build(ctx, runtime.BuildSpec{ID: randomID("build-"), Build: b, Upload: up.upload})
	if err != nil {
		t.Fatal(err)
	}
	e := watch(t, j)
	e.line("build", "sleeping")
	began := time.Now()
	j.Stop("cancelled by a test", time.Second)
	res := e.end()
	wantResult(t, res, runtime.Error, "cancelled by a test")
	if f := e.final("build"); f.State != runtime.Failed || f.Reason != "stopped: cancelled by a test" {
		t.Errorf("final %s %q", f.State, f.Reason)
	}
	if d := time.Since(began); d > 20*time.Second {
		t.Errorf("the stop took %s", d)
	}
	// A later build must never take a stopped step for built.
	if ok, err := r.hasImage(ctx, b.Image(1)); ok || err != nil {
		t.Errorf("the stopped step's image is tagged (%v)", err)
	}
	// Step 1's image exists now: named through docker.io, it is still a
	// blueprint's and no base.
	stolen := b
	stolen.Repository = "levers9-bp/" + randomID("t")
	stolen.Steps = keyed(wire.BuildStep{Kind: wire.StepRegistry, Ref: "docker.io/" + b.Image(0)})
	e, res = runBuild(t, r, runtime.BuildSpec{Build: stolen, Upload: up.upload})
	if res.Status != runtime.Error || !strings.Contains(res.Reason, "is a blueprint's") {
		t.Errorf("a base naming a blueprint: %s %q\n%s", res.Status, res.Reason, e)
	}

	b.Steps = keyed(b.Steps[0], wire.BuildStep{Kind: wire.StepRun, Commands: []string{"echo oops >&2", "exit 3"}})
	e, res = runBuild(t, r, runtime.BuildSpec{Build: b, Upload: up.upload})
	if res.Status != runtime.Error || !strings.Contains(res.Reason, "step 2/2 RUN") || !strings.Contains(res.Reason, "returned a non-zero code: 3") {
		t.Errorf("failing step: %s %q\n%s", res.Status, res.Reason, e)
	}
	if _, built := up.get(b.Steps[1].Key); built != 0 {
		t.Error("a failed build uploaded")
	}
}

// A commit of a running container captures what was written into it.
func TestDockerBuildCommit(t *testing.T) {
	t.Parallel()
	r := newRuntime(t)
	repo := "levers9-bp/" + randomID("t")
	t.Cleanup(func() { removeRepository(t, repo) })
	j := start(t, r, runtime.ServiceSpec{Name: "sandbox", Command: sh("echo snap > /tmp/snap.txt; echo ready; sleep 600")})
	e := watch(t, j)
	e.line("sandbox", "ready")
	image := repo + ":" + strings.Repeat("a", 64)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if _, err := j.(runtime.Committer).Commit(ctx, "nope", image); !errors.Is(err, runtime.ErrNoService) {
		t.Errorf("commit of an unknown service: %v", err)
	}
	if _, err := j.(runtime.Committer).Commit(ctx, "sandbox", "busybox:mine"); err == nil {
		t.Error("a commit to a non-blueprint image was taken")
	}
	rc, err := j.(runtime.Committer).Commit(ctx, "sandbox", image)
	if err != nil {
		t.Fatal(err)
	}
	tar, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	if ins, err := r.cli.ImageInspect(ctx, image); err != nil {
		t.Fatal(err)
	} else if l := ins.Config.Labels; l[labelJob] != "" || l[labelPorts] != "" || l[labelNode] != "" || l[LabelBlueprint] != strings.Repeat("a", 64) {
		t.Errorf("the snapshot's labels: %v", l)
	}
	j.Stop("done", time.Second)
	e.end()
	removeRepository(t, repo)
	loadTar(t, r, tar)
	if got := runOnce(t, r, image, "cat", "/tmp/snap.txt"); !slices.Equal(got, []string{"snap"}) {
		t.Errorf("the snapshot holds %q", got)
	}
}
