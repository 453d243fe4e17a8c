package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"
)

// tmpDir holds uploads in progress, inside the root so that the final
// rename stays on one filesystem; its name is not a valid bucket name.
const tmpDir = ".uploads"

// Local keeps buckets as directories under one root directory: the
// server's own disk (the embedded default) or a node's. Every access to an
// object goes through an os.Root opened at its bucket's directory, so a
// symbolic link (which jobs mounting a bucket can make) is followed only
// while it stays inside that bucket: one leading to another bucket of the
// storage, or anywhere else, is refused with ErrOutside.
type Local struct {
	root *os.Root
}

// OpenLocal opens (creating it if needed) a local store at dir.
func OpenLocal(dir string) (*Local, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating storage directory: %w", err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening storage directory: %w", err)
	}
	return &Local{root: r}, nil
}

// Close releases the root.
func (l *Local) Close() error { return l.root.Close() }

// bucket opens the directory of bucket as a root of its own. The bucket's
// entry must be a real directory, not a link to one (the entry is the
// server's, but it is checked anyway, and checked to be what was opened).
func (l *Local) bucket(name string) (*os.Root, error) {
	if err := CheckBucket(name); err != nil {
		return nil, err
	}
	fi, err := l.root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: bucket directory %s is not a directory", ErrOutside, name)
	}
	r, err := l.root.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	if opened, err := r.Stat("."); err != nil || !os.SameFile(fi, opened) {
		r.Close()
		return nil, fmt.Errorf("%w: bucket directory %s changed while opened", ErrOutside, name)
	}
	return r, nil
}

// object opens the root of bucket and checks key.
func (l *Local) object(bucket, key string) (*os.Root, error) {
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	return l.bucket(bucket)
}

// Stat describes an object.
func (l *Local) Stat(_ context.Context, bucket, key string) (Object, error) {
	r, err := l.object(bucket, key)
	if err != nil {
		return Object{}, localError(bucket, key, err)
	}
	defer r.Close()
	fi, err := r.Stat(key)
	if err != nil || !fi.Mode().IsRegular() {
		return Object{}, localError(bucket, key, err)
	}
	return Object{Key: key, Size: fi.Size(), Modified: fi.ModTime()}, nil
}

// Get streams an object.
func (l *Local) Get(_ context.Context, bucket, key string) (io.ReadCloser, Object, error) {
	r, err := l.object(bucket, key)
	if err != nil {
		return nil, Object{}, localError(bucket, key, err)
	}
	defer r.Close() // the file stays open
	// Non-blocking, so that a FIFO a job left in its bucket is refused
	// below instead of hanging the reader.
	f, err := r.OpenFile(key, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, Object{}, localError(bucket, key, err)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, Object{}, localError(bucket, key, err)
	}
	return f, Object{Key: key, Size: fi.Size(), Modified: fi.ModTime()}, nil
}

// Put writes r to a temporary file and renames it into place. The file is
// written outside the bucket (so no one sees it half-written) and moved
// with renameat between directory descriptors: the destination directory
// is opened through the bucket's root, so a link cannot send it elsewhere,
// and a link at the key itself is replaced, not followed.
func (l *Local) Put(ctx context.Context, bucket, key string, r io.Reader, size int64) (Object, error) {
	if err := CheckBucket(bucket); err != nil {
		return Object{}, err
	}
	if err := CheckKey(key); err != nil {
		return Object{}, err
	}
	if err := l.root.MkdirAll(tmpDir, 0o700); err != nil {
		return Object{}, fmt.Errorf("preparing upload: %w", err)
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmpName := hex.EncodeToString(rnd[:])
	tmp := tmpDir + "/" + tmpName
	f, err := l.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return Object{}, fmt.Errorf("preparing upload: %w", err)
	}
	n, err := io.Copy(f, ctxReader{ctx, r})
	if err == nil && size >= 0 && n != size {
		err = fmt.Errorf("upload of %s ended after %d of %d bytes", key, n, size)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = l.place(tmp, bucket, key)
	}
	if err != nil {
		_ = l.root.Remove(tmp)
		if escapes(err) {
			err = ErrOutside
		}
		return Object{}, fmt.Errorf("storing %s/%s: %w", bucket, key, err)
	}
	return l.Stat(ctx, bucket, key)
}

// place moves the finished upload tmp to key of bucket.
func (l *Local) place(tmp, bucket, key string) error {
	if err := l.root.MkdirAll(bucket, 0o700); err != nil {
		return err
	}
	br, err := l.bucket(bucket)
	if err != nil {
		return err
	}
	defer br.Close()
	dir := path.Dir(key)
	if err := br.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	from, err := l.root.Open(path.Dir(tmp))
	if err != nil {
		return err
	}
	defer from.Close()
	to, err := br.Open(dir)
	if err != nil {
		return err
	}
	defer to.Close()
	return renameat(from, path.Base(tmp), to, path.Base(key))
}

// Delete removes an object; removing one that is not there is not an error.
func (l *Local) Delete(_ context.Context, bucket, key string) error {
	r, err := l.object(bucket, key)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return localError(bucket, key, err)
	}
	defer r.Close()
	// Remove takes a link at key away; it never follows one.
	if err := r.Remove(key); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return localError(bucket, key, fmt.Errorf("deleting %s/%s: %w", bucket, key, err))
	}
	return nil
}

// List walks the bucket's directory in key order.
func (l *Local) List(_ context.Context, bucket string, opts ListOptions) ([]Object, error) {
	limit, err := checkList(bucket, opts)
	if err != nil {
		return nil, err
	}
	// The walk goes in key order and stops once the page is full, skipping
	// directories whose keys are all at or before After, so a page costs
	// about its own size however large the bucket; only the files on the
	// page are stat'ed. (A whole walk and a stat of every file per page
	// took 84 s to page through 100,000 files: BenchmarkFilesListing.)
	r, err := l.bucket(bucket)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // an empty bucket has no directory yet
	}
	if err != nil {
		return nil, fmt.Errorf("listing bucket %s: %w", bucket, err)
	}
	defer r.Close()
	var all []Object
	err = walk(r.FS(), "", opts, func(key string, d fs.DirEntry) bool {
		fi, err := d.Info()
		if err != nil || !fi.Mode().IsRegular() {
			return true // removed meanwhile
		}
		all = append(all, Object{Key: key, Size: fi.Size(), Modified: fi.ModTime()})
		return len(all) < limit
	})
	if err != nil && err != errStop {
		return nil, fmt.Errorf("listing bucket %s: %w", bucket, err)
	}
	return all, nil
}

// errStop ends a walk early.
var errStop = errors.New("stop walking")

// walk calls fn with the regular files under dir of a bucket's root (dir
// is "" or ends in "/"; links are not followed) whose keys start with opts.Prefix and sort after opts.After, in
// key order, until fn returns false. Keys order as strings, not path by
// path ("a-b" < "a/x" though "a" < "a-b"), so each directory's entries are
// sorted as their keys will: a directory's name with its "/".
func walk(fsys fs.FS, dir string, opts ListOptions, fn func(key string, d fs.DirEntry) bool) error {
	entries, err := fs.ReadDir(fsys, path.Join(".", dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // removed meanwhile
	}
	if err != nil {
		return err
	}
	name := func(d fs.DirEntry) string {
		if d.IsDir() {
			return dir + d.Name() + "/"
		}
		return dir + d.Name()
	}
	sort.Slice(entries, func(i, j int) bool { return name(entries[i]) < name(entries[j]) })
	for _, d := range entries {
		key := name(d)
		if d.IsDir() {
			// Every key below starts with key ("x/"): skip the directory
			// when they all sort at or before After (After >= "x0", '0'
			// being the byte after '/'), or none can match the prefix.
			if opts.After >= key[:len(key)-1]+"0" ||
				!(strings.HasPrefix(key, opts.Prefix) || strings.HasPrefix(opts.Prefix, key)) {
				continue
			}
			if err := walk(fsys, key, opts, fn); err != nil {
				return err
			}
			continue
		}
		if !d.Type().IsRegular() || !strings.HasPrefix(key, opts.Prefix) || key <= opts.After {
			continue
		}
		if !fn(key, d) {
			return errStop
		}
	}
	return nil
}

// Size sums the sizes of a bucket's objects.
func (l *Local) Size(ctx context.Context, bucket string) (int64, error) {
	var total int64
	opts := ListOptions{Limit: MaxPageSize}
	for {
		page, err := l.List(ctx, bucket, opts)
		if err != nil {
			return 0, err
		}
		for _, o := range page {
			total += o.Size
		}
		if len(page) < opts.Limit {
			return total, nil
		}
		opts.After = page[len(page)-1].Key
	}
}

// localError gives the errors of a key's access their storage meaning: a
// missing key (or one that is not a regular file) is ErrNotFound; a path
// that leaves the bucket through a link is ErrOutside.
func localError(bucket, key string, err error) error {
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist):
		return ErrNotFound
	case errors.Is(err, ErrOutside), errors.Is(err, ErrInvalid), errors.Is(err, ErrInvalidKey):
		return err
	case escapes(err):
		return fmt.Errorf("%w: %s/%s", ErrOutside, bucket, key)
	}
	return err
}

// escapes reports whether err is os.Root's refusal of a path that leaves
// the root (through ".." or a link); os does not export that error.
func escapes(err error) bool {
	var pe *fs.PathError
	for errors.As(err, &pe) {
		if pe.Err.Error() == "path escapes from parent" {
			return true
		}
		err = pe.Err
	}
	return false
}

// ctxReader stops a copy when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
