package backup

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// maxManifest bounds the manifest read into memory.
const maxManifest = 1 << 20

// Restore unpacks the archive r into target, a data directory that must
// not exist or be empty: a restore never mixes with other data. It
// unpacks into a directory beside target and renames it into place once
// the whole archive is in and the database passes SQLite's quick_check, so
// a failed restore leaves nothing behind.
func Restore(ctx context.Context, r io.Reader, target string) (Manifest, Summary, error) {
	var m Manifest
	var sum Summary
	target, err := filepath.Abs(target)
	if err != nil {
		return m, sum, fmt.Errorf("data directory: %w", err)
	}
	existed, err := emptyOrMissing(target)
	if err != nil {
		return m, sum, err
	}
	parent := filepath.Dir(target)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return m, sum, fmt.Errorf("creating %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, ".levers9-restore-")
	if err != nil {
		return m, sum, fmt.Errorf("restoring into %s: %w", parent, err)
	}
	done := false
	defer func() {
		if !done {
			_ = os.RemoveAll(tmp)
		}
	}()
	if m, sum, err = unpack(ctx, r, tmp); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("the archive is truncated: %w", err)
		}
		return m, sum, err
	}
	if err := Verify(ctx, filepath.Join(tmp, DatabaseName)); err != nil {
		return m, sum, err
	}
	if existed {
		// Empty (checked above); Remove fails if something arrived since.
		if err := os.Remove(target); err != nil {
			return m, sum, fmt.Errorf("replacing the empty %s: %w", target, err)
		}
	}
	if err := os.Rename(tmp, target); err != nil {
		return m, sum, fmt.Errorf("moving the restored data to %s: %w", target, err)
	}
	done = true
	return m, sum, nil
}

// emptyOrMissing reports whether target exists (as an empty directory),
// or fails when it holds anything or is no directory.
func emptyOrMissing(target string) (bool, error) {
	f, err := os.Open(target)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("data directory %s: %w", target, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		return false, fmt.Errorf("%s is not a directory", target)
	}
	names, err := f.Readdirnames(1)
	if len(names) > 0 {
		return false, fmt.Errorf("refusing to restore into %s: it is not empty (restore into a new directory, then point --data-dir at it)", target)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("data directory %s: %w", target, err)
	}
	return true, nil
}

// unpack writes the archive's files under dir. Every name must stay
// inside it (no absolute paths, no "..", no links: an archive from
// elsewhere may be hostile), and writes go through an os.Root as well.
func unpack(ctx context.Context, r io.Reader, dir string) (Manifest, Summary, error) {
	var m Manifest
	var sum Summary
	zr, err := gzip.NewReader(r)
	if err != nil {
		return m, sum, fmt.Errorf("not a levers9 backup (gzip): %w", err)
	}
	tr := tar.NewReader(zr)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return m, sum, err
	}
	defer root.Close()
	hdr, err := tr.Next()
	if err != nil || hdr.Name != ManifestName {
		return m, sum, fmt.Errorf("not a levers9 backup: it does not start with %s", ManifestName)
	}
	b, err := io.ReadAll(io.LimitReader(tr, maxManifest))
	if err != nil {
		return m, sum, fmt.Errorf("reading the manifest: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, sum, fmt.Errorf("reading the manifest: %w", err)
	}
	if m.Format != Format {
		return m, sum, fmt.Errorf("backup format %d (written by levers9 %s) is not %d: restore it with that version", m.Format, m.Version, Format)
	}
	for {
		if err := ctx.Err(); err != nil {
			return m, sum, err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return m, sum, fmt.Errorf("reading the archive (truncated?): %w", err)
		}
		name := strings.TrimSuffix(hdr.Name, "/")
		if !filepath.IsLocal(name) || path.Clean(name) != name || strings.Contains(name, `\`) || name == ManifestName {
			return m, sum, fmt.Errorf("refusing archive entry %q: its name leaves the data directory", hdr.Name)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o700); err != nil {
				return m, sum, fmt.Errorf("restoring %s: %w", name, err)
			}
		case tar.TypeReg:
			if err := restoreFile(root, name, hdr, tr); err != nil {
				return m, sum, err
			}
			sum.Files++
			sum.Bytes += hdr.Size
			if name == "secret.key" {
				sum.SecretKey = true
			}
		default:
			return m, sum, fmt.Errorf("refusing archive entry %q: type %q is not a file or directory", hdr.Name, hdr.Typeflag)
		}
	}
	if _, err := root.Stat(DatabaseName); err != nil {
		return m, sum, fmt.Errorf("the backup holds no %s", DatabaseName)
	}
	return m, sum, nil
}

func restoreFile(root *os.Root, name string, hdr *tar.Header, r io.Reader) error {
	if d := path.Dir(name); d != "." {
		if err := root.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("restoring %s: %w", name, err)
		}
	}
	// Owner bits only: the data directory is the server's alone.
	mode := fs.FileMode(hdr.Mode)&0o700 | 0o600
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("refusing archive entry %q: it appears twice", name)
	}
	if err != nil {
		return fmt.Errorf("restoring %s: %w", name, err)
	}
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != hdr.Size {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return fmt.Errorf("restoring %s (truncated archive?): %w", name, err)
	}
	if !hdr.ModTime.IsZero() {
		_ = root.Chtimes(name, hdr.ModTime, hdr.ModTime)
	}
	return nil
}
