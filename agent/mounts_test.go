package agent

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
)

func TestParallel(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	tests := []struct {
		name    string
		n, fail int // fail: index that errors, -1 none
		want    error
	}{
		{"none", 0, -1, nil},
		{"fewer than the workers", 3, -1, nil},
		{"many", 1000, -1, nil},
		{"one fails", 500, 17, boom},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var ran atomic.Int64
			err := parallel(context.Background(), tc.n, func(_ context.Context, i int) error {
				ran.Add(1)
				if i == tc.fail {
					return boom
				}
				return nil
			})
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if tc.want == nil && ran.Load() != int64(tc.n) {
				t.Fatalf("ran %d of %d", ran.Load(), tc.n)
			}
		})
	}
}

// After the first error the running calls are cancelled and almost no more
// start; a context that ended stops the pool with its error.
func TestParallelStops(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	t.Run("first error cancels the rest", func(t *testing.T) {
		t.Parallel()
		var started atomic.Int64
		err := parallel(context.Background(), 1000, func(ctx context.Context, i int) error {
			started.Add(1)
			if i == 0 {
				return boom
			}
			<-ctx.Done() // only the failure ends the others
			return ctx.Err()
		})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want %v", err, boom)
		}
		// The call waiting for a free worker when the failure came may start.
		if n := started.Load(); n > transfers+1 {
			t.Fatalf("%d calls started after a failure; at most %d run at once", n, transfers)
		}
	})
	t.Run("ended context", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var started atomic.Int64
		err := parallel(ctx, 100, func(context.Context, int) error { started.Add(1); return nil })
		if !errors.Is(err, context.Canceled) || started.Load() != 0 {
			t.Fatalf("err = %v after %d calls, want context.Canceled after none", err, started.Load())
		}
	})
}

func TestLocalName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for key, ok := range map[string]bool{
		"a.txt": true, "runs/1/out.bin": true,
		"": false, "../escape": false, "a/../../b": false, "/etc/passwd": false, "a//b": false, "a/./b": false,
	} {
		name, err := localName(dir, key)
		if (err == nil) != ok {
			t.Errorf("localName(%q) = %q, %v; want ok %v", key, name, err, ok)
		}
		if err == nil && filepath.Dir(name) != filepath.Join(dir, filepath.Dir(key)) {
			t.Errorf("localName(%q) = %q, outside %s", key, name, dir)
		}
	}
}
