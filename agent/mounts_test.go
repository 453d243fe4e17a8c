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
