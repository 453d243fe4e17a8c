package agent

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/levers9/levers9/internal/wire"
)

// A sync request survives transient failures (5xx, a body cut short) and
// gives up at once on a refusal; every attempt sends the node credential
// and the job.
func TestFilesClientRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		failures int // answers before the good one
		status   int // of the failures
		wantErr  bool
		attempts int64
	}{
		{"succeeds after server errors", 2, http.StatusServiceUnavailable, false, 3},
		{"succeeds after being rate limited", 1, http.StatusTooManyRequests, false, 2},
		{"refusal is final", 1, http.StatusForbidden, true, 1},
		{"bad request is final", 1, http.StatusBadRequest, true, 1},
		{"gives up after its attempts", fileAttempts + 5, http.StatusBadGateway, true, fileAttempts},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := calls.Add(1)
				if r.Header.Get("Authorization") != "Bearer cred" || r.Header.Get(wire.JobHeader) != "job_1" {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				if n <= int64(tc.failures) {
					w.WriteHeader(tc.status)
					_, _ = io.WriteString(w, `{"error":{"code":"X","message":"no"}}`)
					return
				}
				if body, _ := io.ReadAll(r.Body); string(body) != "result" {
					w.WriteHeader(http.StatusBadRequest)
					return
				}
				w.WriteHeader(http.StatusCreated)
			}))
			defer srv.Close()
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "out"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "out", "r.txt"), []byte("result"), 0o644); err != nil {
				t.Fatal(err)
			}
			fc := &filesClient{server: srv.URL, credential: "cred", jobID: "job_1"}
			err := fc.upload(context.Background(), "bkt_1", "out/r.txt", dir)
			var refused *refusedError
			switch {
			case (err != nil) != tc.wantErr:
				t.Fatalf("upload: %v", err)
			case tc.status < 500 && tc.wantErr && !errors.As(err, &refused):
				t.Fatalf("a refusal should be final: %v", err)
			}
			if got := calls.Load(); got != tc.attempts {
				t.Fatalf("%d attempts, want %d", got, tc.attempts)
			}
		})
	}
}

// A context that ends while a request waits to be retried ends it at once.
func TestFilesClientStopsWithContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		cancel()
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	fc := &filesClient{server: srv.URL, credential: "cred", jobID: "job_1"}
	err := fc.remove(ctx, "bkt_1", "k")
	if !errors.Is(err, context.Canceled) || calls.Load() != 1 {
		t.Fatalf("err = %v after %d calls; want context.Canceled after 1", err, calls.Load())
	}
}

// A download cut short is retried, and the file appears only whole.
func TestFilesClientDownloadWhole(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "10")
		if calls.Add(1) == 1 {
			_, _ = io.WriteString(w, "01234") // the connection ends short
			return
		}
		_, _ = io.WriteString(w, "0123456789")
	}))
	defer srv.Close()
	dst := filepath.Join(t.TempDir(), "in", "data.bin")
	fc := &filesClient{server: srv.URL, credential: "cred", jobID: "job_1"}
	if err := fc.download(context.Background(), "bkt_1", "in/data.bin", dst); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dst); string(got) != "0123456789" || calls.Load() != 2 {
		t.Fatalf("got %q after %d calls", got, calls.Load())
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dst), ".levers9-part-*")); len(left) != 0 {
		t.Fatalf("partial files left: %v", left)
	}
}
