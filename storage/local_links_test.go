package storage

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// linkedStore is a local store with buckets "outputs" and "private" where
// outputs holds links: out of the bucket (to private, relative and
// absolute, to a file and to a directory) and within it, and a FIFO. The bucket
// directory "alias" is itself a link to private.
func linkedStore(t *testing.T) (*Local, string) {
	t.Helper()
	l, dir := openLocal(t)
	ctx := context.Background()
	for _, o := range []struct{ bucket, key string }{
		{"private", "secret"}, {"private", "sub/deep"}, {"outputs", "real"}, {"outputs", "sub/file"},
	} {
		if _, err := l.Put(ctx, o.bucket, o.key, strings.NewReader(o.bucket+"/"+o.key), -1); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "outputs")
	for name, target := range map[string]string{
		"steal":     "../private/secret",
		"absolute":  filepath.Join(dir, "private", "secret"),
		"dirlink":   "../private",
		"sub/up":    "../../private/secret",
		"inside":    "real",
		"insidedir": "sub",
	} {
		if err := os.Symlink(target, filepath.Join(out, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("private", filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(out, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return l, dir
}

// Nothing outside a bucket is reachable through it: a link that leaves the
// bucket, even to another bucket of the same storage, is refused with
// ErrOutside for reading, and writes and deletes through it never touch
// what it points at. Links within the bucket work.
func TestLocalLinksStayInBucket(t *testing.T) {
	t.Parallel()
	testLinksStayInBucket(t, func(t *testing.T) (Driver, string) { return linkedStore(t) })
}

// testLinksStayInBucket checks a driver over linkedStore's layout; dir is
// the store's directory on disk.
func testLinksStayInBucket(t *testing.T, open func(t *testing.T) (Driver, string)) {
	ctx := context.Background()
	escaping := []string{"steal", "absolute", "dirlink/secret", "dirlink/sub/deep", "sub/up"}
	t.Run("read", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t)
		for _, k := range escaping {
			if rc, _, err := d.Get(ctx, "outputs", k); err == nil {
				b, _ := io.ReadAll(rc)
				rc.Close()
				t.Errorf("Get(outputs, %s) read %q", k, b)
			} else if !errors.Is(err, ErrOutside) && !strings.Contains(err.Error(), ErrOutside.Error()) {
				t.Errorf("Get(outputs, %s) = %v, want %v", k, err, ErrOutside)
			}
			if o, err := d.Stat(ctx, "outputs", k); err == nil {
				t.Errorf("Stat(outputs, %s) = %+v", k, o)
			}
		}
		if _, _, err := d.Get(ctx, "outputs", "fifo"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get of a FIFO = %v, want %v", err, ErrNotFound)
		}
		for k, want := range map[string]string{"inside": "outputs/real", "insidedir/file": "outputs/sub/file"} {
			rc, _, err := d.Get(ctx, "outputs", k)
			if err != nil {
				t.Errorf("Get(outputs, %s) of a link inside the bucket: %v", k, err)
				continue
			}
			b, _ := io.ReadAll(rc)
			rc.Close()
			if string(b) != want {
				t.Errorf("Get(outputs, %s) = %q, want %q", k, b, want)
			}
		}
		objs, err := d.List(ctx, "outputs", ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, o := range objs {
			keys = append(keys, o.Key)
		}
		if got := strings.Join(keys, ","); got != "real,sub/file" {
			t.Errorf("listing = %s, want real,sub/file (links are not followed)", got)
		}
		if n, err := d.Size(ctx, "outputs"); err != nil || n != int64(len("outputs/real")+len("outputs/sub/file")) {
			t.Errorf("Size = %d, %v", n, err)
		}
		// A bucket directory that is a link is no way in either.
		if _, _, err := d.Get(ctx, "alias", "secret"); err == nil {
			t.Error("Get(alias, secret) through a linked bucket directory succeeded")
		}
		if objs, err := d.List(ctx, "alias", ListOptions{}); err == nil && len(objs) > 0 {
			t.Errorf("List(alias) through a linked bucket directory = %+v", objs)
		}
	})
	t.Run("write", func(t *testing.T) {
		t.Parallel()
		d, dir := open(t)
		for _, k := range []string{"dirlink/new", "dirlink/sub/new2"} {
			if _, err := d.Put(ctx, "outputs", k, strings.NewReader("planted"), -1); err == nil {
				t.Errorf("Put(outputs, %s) through a link out of the bucket succeeded", k)
			}
		}
		for _, k := range []string{"dirlink/secret", "sub/up", "steal"} {
			_ = d.Delete(ctx, "outputs", k)
		}
		// Writing to a link's key replaces the link, never its target.
		if _, err := d.Put(ctx, "outputs", "absolute", strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
		entries, _ := os.ReadDir(filepath.Join(dir, "private"))
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if got := strings.Join(names, ","); got != "secret,sub" {
			t.Errorf("private holds %s after writes through links, want secret,sub", got)
		}
		for _, f := range []string{"secret", "sub/deep"} {
			if b, err := os.ReadFile(filepath.Join(dir, "private", f)); err != nil || string(b) != "private/"+f {
				t.Errorf("private/%s = %q, %v", f, b, err)
			}
		}
	})
}
