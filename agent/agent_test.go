package agent

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levers9/levers9/agent/runtime"
)

// noRuntime runs nothing: these tests never get as far as a job.
type noRuntime struct{}

func (noRuntime) Start(context.Context, runtime.JobSpec) (runtime.Job, error) {
	return nil, errors.New("no runtime")
}
func (noRuntime) Name() string { return "process" }

// Run reconnects while the server fails, ends at once with
// ErrCredentialRefused when the server refuses the node, and ends quietly
// when its context does (also in the middle of a wait).
func TestRunReconnects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		status  int
		stopAt  int64 // cancel the context at this call; 0: never
		want    error
		atLeast int64 // calls the server sees
		atMost  int64
		within  time.Duration // Run's end
	}{
		{"refused credential is final", http.StatusUnauthorized, 0, ErrCredentialRefused, 1, 1, 5 * time.Second},
		{"server errors are retried until the context ends", http.StatusServiceUnavailable, 3, nil, 3, 3, 5 * time.Second},
		// The first wait is at least minBackoff/2: ending well before it
		// shows the wait gave way to the context.
		{"a context ending during the wait stops it", http.StatusBadGateway, 1, nil, 1, 1, minBackoff / 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var calls atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n := calls.Add(1); n == tc.stopAt {
					// After this answer, while Run waits to reconnect.
					time.AfterFunc(50*time.Millisecond, cancel)
				}
				w.WriteHeader(tc.status)
			}))
			defer srv.Close()
			dir := t.TempDir()
			if err := SaveState(dir, &State{Server: srv.URL, NodeID: "node_1", Credential: "lv9_x"}); err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			err := Run(ctx, Config{StateDir: dir, Runtime: noRuntime{}})
			if !errors.Is(err, tc.want) {
				t.Fatalf("Run = %v, want %v", err, tc.want)
			}
			if n := calls.Load(); n < tc.atLeast || n > tc.atMost {
				t.Fatalf("%d connection attempts, want %d to %d", n, tc.atLeast, tc.atMost)
			}
			if took := time.Since(began); took > tc.within {
				t.Fatalf("Run took %v, want at most %v", took, tc.within)
			}
		})
	}
}
