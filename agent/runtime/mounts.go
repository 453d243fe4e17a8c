package runtime

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// linkMounts links every mount into working directory dir, at its path
// made relative (a mount at /data/in is dir/data/in).
func linkMounts(dir string, mounts []Mount) error {
	for _, m := range mounts {
		rel := strings.TrimPrefix(path.Clean("/"+m.Path), "/")
		if rel == "" {
			return fmt.Errorf("mount %q: not a path below /", m.Path)
		}
		at := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
			return fmt.Errorf("mount %s: %w", m.Path, err)
		}
		if err := os.Symlink(m.Dir, at); err != nil {
			return fmt.Errorf("mount %s: %w", m.Path, err)
		}
	}
	return nil
}
