package storage

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Local lists in key order even where that differs from path order ("a-b"
// sorts before "a/x", though directory "a" sorts before file "a-b"), page
// by page, with prefixes cutting through names.
func TestLocalListKeyOrder(t *testing.T) {
	dir := t.TempDir()
	keys := []string{"a/x", "a/y", "a-b", "a0", "a/b/c", "a.d/e", "b", "ab/c", "a!"}
	for _, k := range keys {
		p := filepath.Join(dir, "data", k)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(k), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(keys)
	l, err := OpenLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, prefix := range []string{"", "a", "a/", "a/b", "a-", "z"} {
		var want, got []string
		for _, k := range keys {
			if strings.HasPrefix(k, prefix) {
				want = append(want, k)
			}
		}
		for _, limit := range []int{1, 2, 3, 100} {
			got = got[:0]
			opts := ListOptions{Prefix: prefix, Limit: limit}
			for {
				page, err := l.List(context.Background(), "data", opts)
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range page {
					got = append(got, o.Key)
					if o.Size != int64(len(o.Key)) {
						t.Errorf("%s: size %d", o.Key, o.Size)
					}
				}
				if len(page) < limit {
					break
				}
				opts.After = page[len(page)-1].Key
			}
			if !slices.Equal(got, want) {
				t.Errorf("prefix %q, pages of %d: %q, want %q", prefix, limit, got, want)
			}
		}
	}
}
