package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"sync"

	"github.com/levers9/levers9/sdk/python"
)

// sdkFiles are the levers9 package's files and a hash of them, which
// names their folder: an agent of another version writes its own.
var sdkFiles = sync.OnceValues(func() (map[string][]byte, string) {
	files := map[string][]byte{}
	var names []string
	_ = fs.WalkDir(python.Package, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := fs.ReadFile(python.Package, p)
		if err != nil {
			return err
		}
		files[p], names = b, append(names, p)
		return nil
	})
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(files[n]))
		h.Write(files[n])
	}
	return files, hex.EncodeToString(h.Sum(nil))[:16]
})

// sdkDir returns the folder holding the levers9 package (its levers9/
// subfolder) for function containers, writing it the first time.
func (a *Agent) sdkDir() (string, error) {
	files, hash := sdkFiles()
	if len(files) == 0 {
		return "", fmt.Errorf("this agent was built without the levers9 Python package")
	}
	root := filepath.Join(a.cfg.StateDir, "sdk")
	dir := filepath.Join(root, hash)
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return dir, nil
	}
	_, err, _ := a.code.fetching.Do("sdk", func() (any, error) {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return nil, nil
		}
		if err := os.MkdirAll(root, 0o700); err != nil {
			return nil, err
		}
		tmp, err := os.MkdirTemp(root, ".write-*")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		for name, b := range files {
			to := filepath.Join(tmp, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(to, b, 0o644); err != nil {
				return nil, err
			}
			if err := os.Chmod(to, 0o644); err != nil {
				return nil, err
			}
			for d := path.Dir(name); d != "."; d = path.Dir(d) {
				if err := os.Chmod(filepath.Join(tmp, filepath.FromSlash(d)), 0o755); err != nil {
					return nil, err
				}
			}
		}
		if err := os.Chmod(tmp, 0o755); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp, dir); err != nil {
			if fi, serr := os.Stat(dir); serr == nil && fi.IsDir() {
				return nil, nil
			}
			return nil, err
		}
		return nil, nil
	})
	if err != nil {
		return "", err
	}
	return dir, nil
}
