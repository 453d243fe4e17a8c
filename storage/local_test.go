package storage

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/objtest"
)

func openLocal(t *testing.T) (*Local, string) {
	t.Helper()
	dir := t.TempDir()
	l, err := OpenLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, dir
}

// eachDriver runs fn on the local driver and on S3 (a real MinIO).
func eachDriver(t *testing.T, fn func(t *testing.T, d Driver)) {
	t.Run("local", func(t *testing.T) {
		t.Parallel()
		l, _ := openLocal(t)
		fn(t, l)
	})
	t.Run("s3", func(t *testing.T) {
		t.Parallel()
		s, err := OpenS3(S3Config{Endpoint: objtest.Endpoint(t), Bucket: objtest.BucketName(),
			AccessKeyID: objtest.AccessKey, SecretAccessKey: objtest.SecretKey, AllowPrivate: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.EnsureBucket(context.Background()); err != nil {
			t.Fatal(err)
		}
		fn(t, s)
	})
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	eachDriver(t, testRoundTrip)
}

func testRoundTrip(t *testing.T, l Driver) {
	ctx := context.Background()
	for _, k := range []string{"b.txt", "a/1.txt", "a/2.txt", "a/sub/3.txt", "c"} {
		if _, err := l.Put(ctx, "data", k, strings.NewReader("content of "+k), -1); err != nil {
			t.Fatal(err)
		}
	}
	rc, obj, err := l.Get(ctx, "data", "a/sub/3.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "content of a/sub/3.txt" || obj.Size != int64(len(b)) {
		t.Fatalf("got %q, %+v", b, obj)
	}
	page, err := l.List(ctx, "data", ListOptions{Prefix: "a/", Limit: 2})
	if err != nil || len(page) != 2 || page[0].Key != "a/1.txt" || page[1].Key != "a/2.txt" {
		t.Fatalf("first page: %+v, %v", page, err)
	}
	page, err = l.List(ctx, "data", ListOptions{Prefix: "a/", Limit: 2, After: page[1].Key})
	if err != nil || len(page) != 1 || page[0].Key != "a/sub/3.txt" {
		t.Fatalf("second page: %+v, %v", page, err)
	}
	size, err := l.Size(ctx, "data")
	if err != nil || size != int64(len("content of ")*5+len("b.txt")+len("a/1.txt")*2+len("a/sub/3.txt")+len("c")) {
		t.Fatalf("size = %d, %v", size, err)
	}
	if err := l.Delete(ctx, "data", "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Stat(ctx, "data", "c"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("stat after delete: %v", err)
	}
	if page, err := l.List(ctx, "empty", ListOptions{}); err != nil || len(page) != 0 {
		t.Fatalf("empty bucket: %+v, %v", page, err)
	}
}

// An upload that fails half-way leaves the previous object, not a part.
func TestPutIsAtomic(t *testing.T) {
	t.Parallel()
	eachDriver(t, testPutIsAtomic)
	l, dir := openLocal(t)
	if _, err := l.Put(context.Background(), "data", "f", io.MultiReader(strings.NewReader("x"), failingReader{}), -1); err == nil {
		t.Fatal("failed upload reported success")
	}
	if left, _ := os.ReadDir(filepath.Join(dir, tmpDir)); len(left) != 0 {
		t.Fatalf("failed uploads left %d temporary files", len(left))
	}
}

func testPutIsAtomic(t *testing.T, l Driver) {
	ctx := context.Background()
	if _, err := l.Put(ctx, "data", "f", strings.NewReader("old"), 3); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Put(ctx, "data", "f", io.MultiReader(strings.NewReader("new but"), failingReader{}), -1); err == nil {
		t.Fatal("failed upload reported success")
	}
	if _, err := l.Put(ctx, "data", "f", strings.NewReader("short"), 100); err == nil {
		t.Fatal("upload shorter than announced reported success")
	}
	rc, _, err := l.Get(ctx, "data", "f")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "old" {
		t.Fatalf("after failed uploads the object is %q", b)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

// Every way out of a bucket is refused by every driver.
func TestKeysRefused(t *testing.T) {
	t.Parallel()
	eachDriver(t, func(t *testing.T, d Driver) {
		ctx := context.Background()
		for _, k := range badKeys {
			if _, err := d.Put(ctx, "data", k, strings.NewReader("x"), 1); !errors.Is(err, ErrInvalidKey) {
				t.Errorf("Put(%q) = %v", k, err)
			}
			if _, _, err := d.Get(ctx, "data", k); !errors.Is(err, ErrInvalidKey) {
				t.Errorf("Get(%q) = %v", k, err)
			}
			if _, err := d.Stat(ctx, "data", k); !errors.Is(err, ErrInvalidKey) {
				t.Errorf("Stat(%q) = %v", k, err)
			}
			if err := d.Delete(ctx, "data", k); !errors.Is(err, ErrInvalidKey) {
				t.Errorf("Delete(%q) = %v", k, err)
			}
		}
		for _, b := range []string{"..", "../data", "a/b", "", "UPPER", "x"} {
			if _, err := d.List(ctx, b, ListOptions{}); !errors.Is(err, ErrInvalid) {
				t.Errorf("List(bucket %q) = %v", b, err)
			}
			if _, err := d.Put(ctx, b, "k", strings.NewReader("x"), 1); !errors.Is(err, ErrInvalid) {
				t.Errorf("Put(bucket %q) = %v", b, err)
			}
		}
		if _, err := d.List(ctx, "data", ListOptions{Prefix: "../"}); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("List with prefix ../ = %v", err)
		}
	})
}

var badKeys = []string{
	"../secret", "../../etc/passwd", "a/../../b", "./a", "a/./b", "a//b", "/etc/passwd",
	"%2e%2e/secret", "%2E%2E%2Fsecret", "a%2fb", "..%5csecret", "a\\..\\b", "a\x00b", "a\nb",
	"", strings.Repeat("a", MaxKeyBytes+1), "\xff", "..", ".", "a/..",
}

// On the local driver nothing outside the root is touched, symlinks included.
func TestLocalTraversalRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, dir := openLocal(t)
	secret := filepath.Join(filepath.Dir(dir), "secret-"+filepath.Base(dir))
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(secret) })
	if _, err := l.Put(ctx, "data", "ok", bytes.NewReader(nil), 0); err != nil {
		t.Fatal(err)
	}
	// A symlink planted inside a bucket must not lead out either.
	if err := os.Symlink(secret, filepath.Join(dir, "data", "link")); err != nil {
		t.Fatal(err)
	}
	keys := badKeys
	if rc, _, err := l.Get(ctx, "data", "link"); err == nil {
		b, _ := io.ReadAll(rc)
		rc.Close()
		t.Errorf("Get through a symlink out of the store read %q", b)
	}
	for _, k := range keys {
		_, err := l.Put(ctx, "data", k, strings.NewReader("x"), 1)
		if err == nil {
			t.Errorf("Put(%q) succeeded", k)
		}
		if rc, _, err := l.Get(ctx, "data", k); err == nil {
			b, _ := io.ReadAll(rc)
			rc.Close()
			t.Errorf("Get(%q) read %q", k, b)
		}
		if err := CheckKey(k); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("CheckKey(%q) = %v", k, err)
		}
		if err := l.Delete(ctx, "data", k); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Delete(%q) = %v", k, err)
		}
	}
	// Writing to the symlink's key replaces the link, never its target.
	if _, err := l.Put(ctx, "data", "link", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(secret); string(b) != "secret" {
		t.Fatalf("the file outside the store changed: %q", b)
	}
}

func FuzzCheckKey(f *testing.F) {
	for _, k := range []string{"a/b.txt", "../x", "%2e%2e/x", "a//b", "a/./b"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if CheckKey(key) != nil {
			return
		}
		// Whatever passes is a clean relative path that stays put.
		if path.Clean(key) != key || strings.HasPrefix(key, "/") ||
			strings.Contains(key, "\x00") || strings.Contains(key, "\\") {
			t.Fatalf("accepted %q", key)
		}
		for _, seg := range strings.Split(key, "/") {
			if seg == ".." || seg == "." {
				t.Fatalf("accepted %q", key)
			}
		}
	})
}
