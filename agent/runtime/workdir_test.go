package runtime

import (
	"os"
	"path/filepath"
	"testing"
)

// removeWorkDir deletes a job's directory whatever its services left in
// it, and never what a link in it points to.
func TestRemoveWorkDir(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir, outside string)
	}{
		{"empty", func(*testing.T, string, string) {}},
		{"a service's files", func(t *testing.T, dir, _ string) {
			must(t, os.MkdirAll(filepath.Join(dir, "b", "cache", "deep"), 0o700))
			must(t, os.WriteFile(filepath.Join(dir, "b", "cache", "deep", "f"), []byte("x"), 0o600))
		}},
		{"a link to a mount", func(t *testing.T, dir, outside string) {
			must(t, os.Symlink(outside, filepath.Join(dir, "a", "data")))
		}},
		{"a file beside the services", func(t *testing.T, dir, _ string) {
			must(t, os.WriteFile(filepath.Join(dir, "stray"), nil, 0o600))
		}},
		{"a service's directory gone", func(t *testing.T, dir, _ string) {
			must(t, os.Remove(filepath.Join(dir, "b")))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			dir, outside := filepath.Join(root, "job"), filepath.Join(root, "mounted")
			must(t, os.MkdirAll(outside, 0o700))
			must(t, os.WriteFile(filepath.Join(outside, "keep"), []byte("x"), 0o600))
			for _, s := range []string{"a", "b"} {
				must(t, os.MkdirAll(filepath.Join(dir, s), 0o700))
			}
			tc.setup(t, dir, outside)
			must(t, removeWorkDir(dir, []ServiceSpec{{Name: "a"}, {Name: "b"}}))
			if _, err := os.Lstat(dir); !os.IsNotExist(err) {
				t.Errorf("the job's directory is left: %v", err)
			}
			if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
				t.Errorf("what a link pointed to is gone: %v", err)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
