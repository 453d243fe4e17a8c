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
