// Package e2e runs the levers9 binary as users do: built from the
// repository, started on a fresh data directory, talked to over HTTP.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/objtest"
)

// binary is the levers9 command built once for all tests.
var binary string

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "levers9-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "levers9")
	// The small supervisor beside it, as `make build` puts it, so the
	// process runtime starts services as fast as an installed node does.
	for out, pkg := range map[string]string{binary: "./cmd/levers9", binary + "-supervise": "./cmd/levers9-supervise"} {
		build := exec.Command("go", "build", "-buildvcs=false", "-o", out, pkg)
		build.Dir = ".." // the repository root: tests run in their package directory
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: building", pkg+":", err)
			return 1
		}
	}
	// Jobs mount buckets of an S3 storage on a private MinIO.
	stopMinIO, err := objtest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer stopMinIO()
	return dbtest.Main(m)
}
