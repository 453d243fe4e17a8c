// Package objtest runs a private MinIO server for tests that need real
// object storage. `make test` builds the MinIO binary once (go install,
// pinned) and passes its path in LEVERS9_MINIO.
package objtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"go/build"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Credentials of the private server.
const (
	AccessKey = "levers9test"
	SecretKey = "levers9-test-secret"
)

// EnvEndpoint holds the endpoint of a running test server, for the test
// binaries of one run (set by Main).
const EnvEndpoint = "LEVERS9_TEST_S3_ENDPOINT"

// binary finds the MinIO server binary.
func binary() (string, error) {
	if p := os.Getenv("LEVERS9_MINIO"); p != "" {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		gopath = build.Default.GOPATH
	}
	p := filepath.Join(gopath, "bin", "minio")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("MinIO server not found at %s: run `make test` (it builds MinIO once) or set LEVERS9_MINIO", p)
	}
	return p, nil
}

// Main starts a MinIO server for the test binary unless one is given in
// EnvEndpoint, runs the tests and stops it. Use it in TestMain.
func Main(m *testing.M) int {
	if os.Getenv(EnvEndpoint) != "" {
		return m.Run()
	}
	stop, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "objtest:", err)
		return 1
	}
	defer stop()
	return m.Run()
}

// Start starts a MinIO server (unless EnvEndpoint names one already), sets
// EnvEndpoint, and returns the function that stops it.
func Start() (func(), error) {
	if os.Getenv(EnvEndpoint) != "" {
		return func() {}, nil
	}
	bin, err := binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "levers9-minio-*")
	if err != nil {
		return nil, err
	}
	ports := make([]int, 2)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	cmd := exec.Command(bin, "server", filepath.Join(dir, "data"), "--address", addr,
		"--console-address", fmt.Sprintf("127.0.0.1:%d", ports[1]), "--quiet")
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+AccessKey, "MINIO_ROOT_PASSWORD="+SecretKey,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting MinIO: %w", err)
	}
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		os.RemoveAll(dir)
	}
	endpoint := "http://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		// Ready, not just live: a live server may still answer "Server not
		// initialized yet" while it sets up its drives.
		resp, err := http.Get(endpoint + "/minio/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-ctx.Done():
			stop()
			return nil, fmt.Errorf("MinIO at %s did not become ready", endpoint)
		case <-time.After(50 * time.Millisecond):
		}
	}
	os.Setenv(EnvEndpoint, endpoint)
	return stop, nil
}

// Endpoint returns the test server's endpoint.
func Endpoint(t testing.TB) string {
	t.Helper()
	e := os.Getenv(EnvEndpoint)
	if e == "" {
		t.Fatal("no MinIO for this test: add objtest.Main to TestMain")
	}
	return e
}

// BucketName returns a fresh S3 bucket name for one test.
func BucketName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "t-" + hex.EncodeToString(b)
}
