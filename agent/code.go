package agent

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"
)

// Limits of a function's code package: the SDK refuses to upload more, and
// the agent refuses to unpack more whatever the zip's headers claim, so a
// crafted package cannot fill the node's disk.
const (
	MaxCodeBytes   = 256 << 20 // the zip, and its files unpacked
	MaxCodeEntries = 100_000
	// codeFetchTimeout bounds one fetch and unpack, shared by every job
	// waiting for the same package.
	codeFetchTimeout = 10 * time.Minute
)

var codeHashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// codeCache unpacks each code package once per node: jobs of a function
// share its directory, read-only.
type codeCache struct {
	fetching singleflight.Group
}

// codeRoot holds the unpacked packages, <state>/code/<hash>.
func (a *Agent) codeRoot() string { return filepath.Join(a.cfg.StateDir, "code") }

// codeDir returns the directory holding code package hash unpacked,
// fetching it for job jobID (whose placement entitles the node to it) when
// the node has not got it yet. Concurrent calls for one hash fetch once.
func (a *Agent) codeDir(ctx context.Context, jobID, hash string) (string, error) {
	if !codeHashRE.MatchString(hash) {
		return "", fmt.Errorf("code package hash %.80q is not a hex SHA-256", hash)
	}
	dir := filepath.Join(a.codeRoot(), hash)
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return dir, nil
	}
	// The fetch outlives a caller that gives up: others may wait for it.
	ch := a.code.fetching.DoChan(hash, func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), codeFetchTimeout)
		defer cancel()
		return dir, a.fetchCode(fctx, jobID, hash, dir)
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return "", r.Err
		}
		return dir, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// fetchCode downloads package hash, checks it is what it claims and
// unpacks it to dir: into a temporary directory first, renamed when
// complete, so dir is never half there.
func (a *Agent) fetchCode(ctx context.Context, jobID, hash, dir string) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil // another fetch finished meanwhile
	}
	root := a.codeRoot()
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("code cache: %w", err)
	}
	zf, err := os.CreateTemp(root, ".zip-*")
	if err != nil {
		return fmt.Errorf("code cache: %w", err)
	}
	defer func() { zf.Close(); os.Remove(zf.Name()) }()
	fc := a.files(jobID)
	url := strings.TrimRight(a.st.Server, "/") + "/agent/code/" + hash
	err = fc.do(ctx, "fetching the code package", func() (*http.Request, error) {
		return http.NewRequest(http.MethodGet, url, nil)
	}, func(resp *http.Response) error {
		if _, err := zf.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if err := zf.Truncate(0); err != nil {
			return err
		}
		h := sha256.New()
		n, err := io.Copy(io.MultiWriter(zf, h), io.LimitReader(resp.Body, MaxCodeBytes+1))
		if err != nil {
			return err
		}
		if n > MaxCodeBytes {
			return &refusedError{status: resp.StatusCode, msg: fmt.Sprintf("the code package is larger than %d MiB", MaxCodeBytes>>20)}
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != hash {
			// Not retried: the server holds the package under the wrong
			// name, or something on the way changes it.
			return &refusedError{status: resp.StatusCode, msg: fmt.Sprintf("the code package's SHA-256 is %s, not %s", got, hash)}
		}
		return nil
	})
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(root, ".unpack-*")
	if err != nil {
		return fmt.Errorf("code cache: %w", err)
	}
	defer os.RemoveAll(tmp) // gone after the rename; left when it failed
	if err := unpackCode(zf, tmp, codeLimits{Bytes: MaxCodeBytes, Entries: MaxCodeEntries}); err != nil {
		return fmt.Errorf("unpacking the code package: %w", err)
	}
	// Containers of any user read it (it is bound read-only).
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("code cache: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if fi, serr := os.Stat(dir); serr == nil && fi.IsDir() {
			return nil // another agent on this state directory won
		}
		return fmt.Errorf("code cache: %w", err)
	}
	return nil
}

// errUnsafeZip marks a package the agent refuses to unpack.
var errUnsafeZip = errors.New("refused")

// codeLimits bound what a package unpacks to.
type codeLimits struct {
	Bytes   int64
	Entries int
}

// unpackCode writes the files of zip file f to dir (which exists, empty).
// Only plain files and folders whose names stay inside dir are taken:
// absolute names, "..", links, devices and other special entries are
// refused, not skipped, as are packages over lim's entries or bytes of
// content (counted as written, whatever the headers say). Files are 0644,
// or 0755 when the package marks them executable.
func unpackCode(f *os.File, dir string, lim codeLimits) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	zr, err := zip.NewReader(f, fi.Size())
	if err != nil {
		return err
	}
	if len(zr.File) > lim.Entries {
		return fmt.Errorf("%w: %d entries, at most %d", errUnsafeZip, len(zr.File), lim.Entries)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	left := lim.Bytes
	for _, e := range zr.File {
		name, isDir, err := zipEntryName(e)
		if err != nil {
			return err
		}
		if isDir {
			if err := root.MkdirAll(name, 0o755); err != nil {
				return fmt.Errorf("%s: %w", e.Name, err)
			}
			continue
		}
		if d := path.Dir(name); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("%s: %w", e.Name, err)
			}
		}
		mode := fs.FileMode(0o644)
		if e.Mode()&0o111 != 0 {
			mode = 0o755
		}
		n, err := unpackFile(root, name, e, mode, left, lim.Bytes)
		if err != nil {
			return fmt.Errorf("%s: %w", e.Name, err)
		}
		left -= n
	}
	return nil
}

// zipEntryName checks entry e and returns its name, slash-separated and
// relative, and whether it is a folder.
func zipEntryName(e *zip.File) (string, bool, error) {
	name := e.Name
	isDir := strings.HasSuffix(name, "/")
	name = strings.TrimSuffix(name, "/")
	switch {
	case name == "" || strings.ContainsAny(name, "\\\x00") || path.IsAbs(name) || !filepath.IsLocal(filepath.FromSlash(name)) || path.Clean(name) != name:
		return "", false, fmt.Errorf("%w: entry %.200q is not a plain relative name inside the package", errUnsafeZip, e.Name)
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == ".." || seg == "." {
			return "", false, fmt.Errorf("%w: entry %.200q leaves the package", errUnsafeZip, e.Name)
		}
	}
	m := e.Mode()
	switch {
	case m&fs.ModeSymlink != 0:
		return "", false, fmt.Errorf("%w: entry %.200q is a symbolic link", errUnsafeZip, e.Name)
	case isDir || m.IsDir():
		if !isDir || !m.IsDir() {
			return "", false, fmt.Errorf("%w: entry %.200q is half a folder", errUnsafeZip, e.Name)
		}
		return name, true, nil
	case !m.IsRegular():
		return "", false, fmt.Errorf("%w: entry %.200q is not a regular file (%v)", errUnsafeZip, e.Name, m.Type())
	}
	return name, false, nil
}

// unpackFile writes entry e to name in root, at most left bytes of the
// package's total, and returns how many it wrote. An entry named twice is
// refused.
func unpackFile(root *os.Root, name string, e *zip.File, mode fs.FileMode, left, total int64) (int64, error) {
	r, err := e.Open()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	out, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, io.LimitReader(r, left+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, err
	}
	if n > left {
		return n, fmt.Errorf("%w: the package unpacks to more than %d bytes", errUnsafeZip, total)
	}
	// Whatever the umask.
	return n, root.Chmod(name, mode)
}
