package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// binDir holds the binaries built for this package's tests, removed at
// the end.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "levers9-deploy-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "deploy:", err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// testVersion is stamped into the test binaries, so the image test can
// tell its binary from another.
const testVersion = "deploy-test"

var (
	buildOnce sync.Once
	buildErr  error
)

// binaries builds levers9 and levers9-supervise once, static as the image
// needs them (CGO_ENABLED=0), into binDir, and returns binDir.
func binaries(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		for out, pkg := range map[string]string{"levers9": "./cmd/levers9", "levers9-supervise": "./cmd/levers9-supervise"} {
			cmd := exec.Command("go", "build", "-buildvcs=false",
				"-ldflags", "-X main.version="+testVersion, "-o", filepath.Join(binDir, out), pkg)
			cmd.Dir = ".." // the repository root: tests run in their package directory
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if b, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("building %s: %v\n%s", pkg, err, b)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

var variableRE = regexp.MustCompile(`LEVERS9_[A-Z0-9_]+`)

// commandVariables are the LEVERS9_* variables a levers9 command reads:
// those its -h names (every flag says its variable) and those named in
// its configuration source files (variables without a flag, such as the
// first admin's seed and LEVERS9_SECRET_KEY).
func commandVariables(t testing.TB, args []string, sources ...string) map[string]bool {
	t.Helper()
	cmd := exec.Command(filepath.Join(binaries(t), "levers9"), append(args, "-h")...)
	cmd.Env = []string{"HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("levers9 %v -h: %v\n%s", args, err, out)
	}
	known := map[string]bool{}
	for _, v := range variableRE.FindAllString(string(out), -1) {
		known[v] = true
	}
	for _, src := range sources {
		b, err := os.ReadFile(filepath.Join("..", src))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range variableRE.FindAllString(string(b), -1) {
			known[v] = true
		}
	}
	if len(known) < 5 {
		t.Fatalf("levers9 %v: found only %v; the help text changed shape?", args, known)
	}
	return known
}

// serverVariables are the variables levers9 server reads.
func serverVariables(t testing.TB) map[string]bool {
	return commandVariables(t, []string{"server"}, "cmd/levers9/serverconfig.go")
}

// agentVariables are the variables levers9 agent (and agent join) reads.
func agentVariables(t testing.TB) map[string]bool {
	known := commandVariables(t, []string{"agent", "join"}, "cmd/levers9/agent.go")
	for v := range commandVariables(t, []string{"agent"}) {
		known[v] = true
	}
	return known
}

// unknownVariables are the LEVERS9_* names among names that known lacks.
func unknownVariables(names []string, known map[string]bool) []string {
	var bad []string
	for _, n := range names {
		if strings.HasPrefix(n, "LEVERS9_") && !known[n] {
			bad = append(bad, n)
		}
	}
	return bad
}
