package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
)

// sdkDir is the Python SDK, from the e2e package directory.
const sdkDir = "../sdk/python"

// The Python SDK's own test suite (python3 -m unittest) against a real
// server with its built-in local node: jobs followed to their end, 250
// jobs paged through, every error class from real answers, log streams
// resumed after cuts, bucket files, the README's examples.
func TestPythonSDK(t *testing.T) {
	t.Parallel()
	python := requirePython(t)
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		s := startServer(t, t.TempDir(), url)
		out, err := runPython(t, python, s.URL, s.credentials().Token, "-m", "unittest", "discover", "-s", "tests", "-t", ".", "-v")
		if err != nil {
			t.Fatalf("python3 -m unittest: %v\n%s", err, out)
		}
		// A suite that skipped itself proved nothing.
		if strings.Contains(out, "skipped") || !strings.Contains(out, "\nOK") {
			t.Fatalf("the SDK suite skipped tests or did not pass:\n%s", out)
		}
		s.stop()
	})
}

// requirePython returns python3's path; the SDK promises 3.9 or newer.
func requirePython(t testing.TB) string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed for the SDK tests: %v", err)
	}
	out, err := exec.Command(python, "-c", "import sys; assert sys.version_info >= (3, 9), sys.version").CombinedOutput()
	if err != nil {
		t.Fatalf("python3 is older than 3.9: %s", out)
	}
	return python
}

// runPython runs python3 in the SDK directory with the SDK importable, the
// server and token in the environment and no config file.
func runPython(t testing.TB, python, server, token string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, args...)
	dir, err := filepath.Abs(sdkDir)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(),
		"PYTHONPATH="+dir, "PYTHONDONTWRITEBYTECODE=1",
		"LEVERS9_SERVER="+server, "LEVERS9_TOKEN="+token,
		"LEVERS9_CONFIG="+filepath.Join(t.TempDir(), "no-config"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}
