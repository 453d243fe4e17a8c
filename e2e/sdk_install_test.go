package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The Python SDK's README says how to install it with no package index
// reachable: pip from the repository folder, and pip from a wheel built by
// sdk/python/_levers9_build.py. tests/install_check.py runs both commands
// in fresh virtual environments with PIP_NO_INDEX=1; it is not part of the
// discovered suite (two venvs take a while), so it runs here, once.
func TestPythonSDKInstallsWithoutAnIndex(t *testing.T) {
	t.Parallel()
	python := requirePython(t)
	dir, err := filepath.Abs(sdkDir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-m", "unittest", "tests.install_check", "-v")
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), "PYTHONDONTWRITEBYTECODE=1", "PIP_NO_INDEX=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest tests.install_check: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "skipped") || !strings.Contains(string(out), "\nOK") {
		t.Fatalf("the install check skipped tests or did not pass:\n%s", out)
	}
}
