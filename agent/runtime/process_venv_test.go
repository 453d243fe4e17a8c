package runtime

import (
	"archive/zip"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/wire"
)

// mypkgWheel writes a pure-Python wheel (a zip) of package mypkg, whose
// X is "hello from mypkg", into dir: pip installs it with no network.
func mypkgWheel(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "mypkg-1.0-py3-none-any.whl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	for _, file := range []struct{ name, body string }{
		{"mypkg/__init__.py", "X = 'hello from mypkg'\n"},
		{"mypkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: mypkg\nVersion: 1.0\n"},
		{"mypkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: levers9-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
		{"mypkg-1.0.dist-info/RECORD", "mypkg/__init__.py,,\nmypkg-1.0.dist-info/METADATA,,\nmypkg-1.0.dist-info/WHEEL,,\nmypkg-1.0.dist-info/RECORD,,\n"},
	} {
		w, err := z.Create(file.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(file.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// newVenvProcess is a runtime whose pip finds only mypkg's wheel (no
// index: no network), the operator's VenvPipArgs.
func newVenvProcess(t *testing.T, cfg ProcessConfig) *Process {
	t.Helper()
	wheels := t.TempDir()
	if err := os.Chmod(wheels, 0o755); err != nil {
		t.Fatal(err)
	}
	mypkgWheel(t, wheels)
	cfg.VenvPipArgs = []string{"--no-index", "--find-links", wheels}
	return newProcessWith(t, cfg)
}

func needVenv(t *testing.T) {
	t.Helper()
	if err := exec.Command("python3", "-c", "import venv, ensurepip").Run(); err != nil {
		t.Skip("python3 with venv and ensurepip is needed:", err)
	}
}

// A blueprint of a base, a PIP step and an ENV step runs on the process
// runtime in a virtual environment built once per key: the second job
// with the same key builds nothing.
func TestVenvBuiltOnceAndUsed(t *testing.T) {
	t.Parallel()
	needVenv(t)
	p := newVenvProcess(t, ProcessConfig{Root: t.TempDir()})
	venv := &wire.Venv{Key: strings.Repeat("ab", 32), Steps: []wire.BuildStep{
		{Kind: wire.StepPip, Packages: []string{"mypkg==1.0"}},
		{Kind: wire.StepEnv, Env: []wire.EnvVar{{Name: "MODE", Value: "from-the-blueprint"}, {Name: "OWN", Value: "blueprint"}}},
	}}
	svc := func(name string) ServiceSpec {
		return ServiceSpec{
			Name: name, Venv: venv, Env: []EnvVar{{Name: "OWN", Value: "service"}},
			Command: []string{"python", "-c", "import mypkg, os, sys; print(mypkg.X); print(os.environ['MODE'], os.environ['OWN']); print(sys.prefix == os.environ['VIRTUAL_ENV'])"},
		}
	}
	want := []string{"hello from mypkg", "from-the-blueprint service", "True"}

	res, evs := start(t, p, JobSpec{ID: "job_venv1", Services: []ServiceSpec{svc("first")}}).wait(t)
	if res.Status != Complete {
		t.Fatalf("first job: %+v\n%s", res, dump(evs))
	}
	out := logs(evs, "first", Stdout)
	if !slices.Contains(out, "levers9: virtual environment "+venv.Key[:12]+" built") {
		t.Fatalf("first job did not build the venv:\n%s", dump(evs))
	}
	if !strings.HasSuffix(strings.Join(out, "\n"), strings.Join(want, "\n")) {
		t.Fatalf("first job printed:\n%s", strings.Join(out, "\n"))
	}
	if _, err := os.Stat(filepath.Join(p.cfg.VenvDir, venv.Key, venvReady)); err != nil {
		t.Fatal("no built venv:", err)
	}

	res, evs = start(t, p, JobSpec{ID: "job_venv2", Services: []ServiceSpec{svc("second")}}).wait(t)
	if res.Status != Complete {
		t.Fatalf("second job: %+v\n%s", res, dump(evs))
	}
	if got := logs(evs, "second", Stdout); !slices.Equal(got, want) {
		t.Fatalf("second job printed (a build?):\n%s", strings.Join(got, "\n"))
	}
	if sys := logs(evs, "second", System); !slices.Contains(sys, "levers9: virtual environment "+venv.Key[:12]+" (cached)") {
		t.Fatalf("second job's system lines %q", sys)
	}
}

// A step that fails fails the service, saying why, and leaves no
// environment behind to be taken for a built one.
func TestVenvBuildFails(t *testing.T) {
	t.Parallel()
	needVenv(t)
	p := newVenvProcess(t, ProcessConfig{Root: t.TempDir()})
	venv := &wire.Venv{Key: strings.Repeat("cd", 32), Steps: []wire.BuildStep{
		{Kind: wire.StepPip, Packages: []string{"levers9-missing==1.0"}},
	}}
	res, evs := start(t, p, JobSpec{ID: "job_venvbad", Services: []ServiceSpec{{Name: "s", Venv: venv, Command: []string{"python", "-c", "print(1)"}}}}).wait(t)
	if res.Status == Complete {
		t.Fatalf("a failed build completed:\n%s", dump(evs))
	}
	st := states(evs, "s")
	if last := st[len(st)-1]; last.State != Failed || !strings.Contains(last.Reason, "virtual environment") || !strings.Contains(last.Reason, "pip install") {
		t.Fatalf("states %+v", st)
	}
	if _, err := os.Stat(filepath.Join(p.cfg.VenvDir, venv.Key)); !os.IsNotExist(err) {
		t.Fatalf("a failed venv is left: %v", err)
	}
}

func TestVenvEnvironment(t *testing.T) {
	t.Parallel()
	v := &wire.Venv{Key: strings.Repeat("a", 64), Steps: []wire.BuildStep{{Kind: wire.StepEnv, Env: []wire.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "bp"}, {Name: "LEVERS9_JOB_ID", Value: "x"}}}}}
	env := venvEnv([]string{"PATH=/usr/bin", "B=own", "LEVERS9_JOB_ID=j"}, "/v", v, ServiceSpec{Env: []EnvVar{{Name: "B", Value: "own"}}})
	want := []string{"PATH=/v/bin:/usr/bin", "B=own", "LEVERS9_JOB_ID=j", "A=1", "VIRTUAL_ENV=/v"}
	if !slices.Equal(env, want) {
		t.Fatalf("env %q, want %q", env, want)
	}
}

// A job running as a uid of its own uses the environment the agent built
// (readable, not writable, by it).
func TestVenvAsJobUID(t *testing.T) {
	t.Parallel()
	needRoot(t)
	needVenv(t)
	p := newVenvProcess(t, ProcessConfig{Root: reachableRoot(t), UIDs: testUIDs(41, 2)})
	venv := &wire.Venv{Key: strings.Repeat("ef", 32), Steps: []wire.BuildStep{{Kind: wire.StepPip, Packages: []string{"mypkg"}}}}
	res, evs := start(t, p, JobSpec{ID: "job_venvuid", Services: []ServiceSpec{{Name: "s", Venv: venv, Command: []string{"sh", "-c",
		`python -c 'import mypkg; print(mypkg.X)' && id -u && { touch "$VIRTUAL_ENV/x" 2>/dev/null && echo writable || echo read-only; }`}}}}).wait(t)
	if res.Status != Complete {
		t.Fatalf("%+v\n%s", res, dump(evs))
	}
	out := logs(evs, "s", Stdout)
	if n := len(out); n < 3 || out[n-3] != "hello from mypkg" || out[n-2] == "0" || out[n-1] != "read-only" {
		t.Fatalf("printed:\n%s", strings.Join(out, "\n"))
	}
}

// A local folder given as a package would be built by pip (its setup code
// run as the agent) even with --only-binary: refused before pip runs.
func TestVenvRefusesPathsAndOptions(t *testing.T) {
	t.Parallel()
	needVenv(t)
	p := newVenvProcess(t, ProcessConfig{Root: t.TempDir()})
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "setup.py"), []byte("open('"+filepath.Join(src, "ran")+"', 'w')\nfrom setuptools import setup\nsetup(name='evil', version='1')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, st := range []wire.BuildStep{
		{Kind: wire.StepPip, Packages: []string{src}},
		{Kind: wire.StepPip, Packages: []string{"mypkg"}, Requirements: "evil @ file://" + src + "\n"},
		{Kind: wire.StepPip, Packages: []string{"mypkg"}, Requirements: "-r /etc/passwd\n"},
	} {
		venv := &wire.Venv{Key: strings.Repeat(string(rune('0'+i)), 64), Steps: []wire.BuildStep{st}}
		if _, err := p.Start(context.Background(), JobSpec{ID: fmt.Sprintf("job_venvevil%d", i), Services: []ServiceSpec{{Name: "s", Venv: venv, Command: []string{"true"}}}}); err == nil {
			t.Fatalf("step %d: started", i)
		}
		// The runtime checks again before it builds (defence in depth).
		if _, _, err := p.venv(venv, func(Stream, string) {}, nil); err == nil || !strings.Contains(err.Error(), "process runtime") {
			t.Fatalf("step %d: venv: %v", i, err)
		}
	}
	if _, err := os.Stat(filepath.Join(src, "ran")); err == nil {
		t.Fatal("the folder's setup.py ran")
	}
}
