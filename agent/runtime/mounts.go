package runtime

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/levers9/levers9/agent/supervise"
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

// bindPoints makes the mount points in working directory dir (empty
// folders, which the host keeps empty) and returns the binds. A job user
// cannot follow a link into the agent's state directory or the server's
// data directory, which it may not enter; a bind mount needs no way in.
func bindPoints(dir string, mounts []Mount, mkdir func(string) error) ([]supervise.Bind, error) {
	var out []supervise.Bind
	for _, m := range mounts {
		rel := strings.TrimPrefix(path.Clean("/"+m.Path), "/")
		if rel == "" {
			return nil, fmt.Errorf("mount %q: not a path below /", m.Path)
		}
		at := filepath.Join(dir, filepath.FromSlash(rel))
		if err := mkdirAll(dir, at, mkdir); err != nil {
			return nil, fmt.Errorf("mount %s: %w", m.Path, err)
		}
		out = append(out, supervise.Bind{Src: m.Dir, Dst: at, ReadOnly: m.ReadOnly})
	}
	return out, nil
}

// ownTree gives everything in dir to uid:gid, so that the job user may use
// its mounts: they are this job's copies, or a bucket it may write. The
// walk stays inside dir whatever links a job left there.
func ownTree(dir string, uid, gid int) error {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer r.Close()
	return fs.WalkDir(r.FS(), ".", func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return r.Lchown(p, uid, gid)
	})
}
