package runtime

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// linkMounts links every mount into working directory dir, at its path
// made relative (a mount at /data/in is dir/data/in); mkdir makes the
// folders on the way.
func linkMounts(dir string, mounts []Mount, mkdir func(string) error) error {
	for _, m := range mounts {
		rel := strings.TrimPrefix(path.Clean("/"+m.Path), "/")
		if rel == "" {
			return fmt.Errorf("mount %q: not a path below /", m.Path)
		}
		at := filepath.Join(dir, filepath.FromSlash(rel))
		if err := mkdirAll(dir, filepath.Dir(at), mkdir); err != nil {
			return fmt.Errorf("mount %s: %w", m.Path, err)
		}
		if err := os.Symlink(m.Dir, at); err != nil {
			return fmt.Errorf("mount %s: %w", m.Path, err)
		}
	}
	return nil
}

// mkdirAll makes the folders from below dir down to path with mkdir.
func mkdirAll(dir, path string, mkdir func(string) error) error {
	if path == dir {
		return nil
	}
	if _, err := os.Lstat(path); err == nil {
		return nil
	}
	if err := mkdirAll(dir, filepath.Dir(path), mkdir); err != nil {
		return err
	}
	return mkdir(path)
}
