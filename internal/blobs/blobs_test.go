package blobs_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent/blob"
	"github.com/levers9/levers9/internal/blobs"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/storage"
)

// world is a store on a fresh database and storage directory, with two
// tenants.
type world struct {
	store       *blobs.Store
	dir         string
	acme, other *fixture.Tenant
}

func newWorld(t *testing.T, url string) *world {
	t.Helper()
	db := fixture.Open(t, url)
	dir := t.TempDir()
	drv, err := storage.OpenLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { drv.Close() })
	return &world{
		store: &blobs.Store{DB: db, Driver: drv, Log: fixture.Log(),
			Limits: map[string]int64{blobs.KindCode: 1 << 20, blobs.KindPayload: 2 << 20}},
		dir:   dir,
		acme:  fixture.NewTenant(t, db, fixture.TenantOptions{Slug: "acme"}),
		other: fixture.NewTenant(t, db, fixture.TenantOptions{Slug: "other"}),
	}
}

// files lists the regular files under the storage directory, temporary
// uploads included.
func (w *world) files(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(w.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(w.dir, p)
			out = append(out, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func random(t *testing.T, n int) ([]byte, string) {
	t.Helper()
	b := make([]byte, n)
	_, _ = rand.Read(b)
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:])
}

// unread fails the test when anything reads it.
type unread struct{ t *testing.T }

func (u unread) Read([]byte) (int, error) {
	u.t.Error("the body of a blob the tenant has was read")
	return 0, io.EOF
}

func code(err error) fault.Code {
	if fs := fault.Classify(err); len(fs) > 0 {
		return fs[0].Code
	}
	return fault.Internal
}

func TestPutOpen(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		w := newWorld(t, url)
		ctx := w.acme.AsAdmin()
		data, hash := random(t, 700<<10)
		created, err := w.store.Put(ctx, blobs.KindCode, hash, bytes.NewReader(data), int64(len(data)))
		if err != nil || !created {
			t.Fatalf("first upload: created %v, %v", created, err)
		}
		// Again, size unknown: nothing is read or written.
		created, err = w.store.Put(ctx, blobs.KindCode, hash, unread{t}, -1)
		if err != nil || created {
			t.Fatalf("second upload: created %v, %v", created, err)
		}
		if n := w.store.DB.Ent.Blob.Query().Where(blob.Hash(hash)).CountX(fixture.Sys()); n != 1 {
			t.Fatalf("%d rows after two uploads", n)
		}
		if has, err := w.store.Has(ctx, hash); !has || err != nil {
			t.Fatalf("Has: %v, %v", has, err)
		}
		rc, size, err := w.store.Open(ctx, hash)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || size != int64(len(data)) || !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes (size %d) identical %v: %v", len(got), size, bytes.Equal(got, data), err)
		}
		if files := w.files(t); len(files) != 1 {
			t.Fatalf("storage holds %v, want the one blob", files)
		}
	})
}

// Another tenant does not see a blob, although the same bytes are stored
// for the first; uploading them makes its own copy. The node path reads
// by tenant.
func TestTenants(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		w := newWorld(t, url)
		data, hash := random(t, 1000)
		if _, err := w.store.Put(w.acme.AsAdmin(), blobs.KindPayload, hash, bytes.NewReader(data), -1); err != nil {
			t.Fatal(err)
		}
		octx := w.other.AsAdmin()
		if has, err := w.store.Has(octx, hash); has || err != nil {
			t.Fatalf("another tenant has it: %v, %v", has, err)
		}
		if _, _, err := w.store.Open(octx, hash); code(err) != fault.NotFound {
			t.Fatalf("another tenant opens it: %v", err)
		}
		if _, _, err := w.store.OpenForTenant(context.Background(), w.other.ID, hash); code(err) != fault.NotFound {
			t.Fatalf("opened for another tenant: %v", err)
		}
		rc, _, err := w.store.OpenForTenant(context.Background(), w.acme.ID, hash)
		if err != nil {
			t.Fatal(err)
		}
		rc.Close()
		created, err := w.store.Put(octx, blobs.KindPayload, hash, bytes.NewReader(data), int64(len(data)))
		if err != nil || !created {
			t.Fatalf("the other tenant's upload: created %v, %v", created, err)
		}
		if files := w.files(t); len(files) != 2 {
			t.Fatalf("storage holds %v, want a copy per tenant", files)
		}
	})
}

// An upload that is not what it says leaves nothing behind: no row, no
// object, no temporary file.
func TestPutRefused(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		w := newWorld(t, url)
		ctx := w.acme.AsAdmin()
		data, hash := random(t, 64<<10)
		_, otherHash := random(t, 10)
		big, bigHash := random(t, 1<<20+1)
		var tooLarge *blobs.TooLargeError
		for _, tc := range []struct {
			name       string
			kind, hash string
			body       []byte
			size       int64
			field      string
			large      bool
		}{
			{"hash mismatch", blobs.KindCode, otherHash, data, int64(len(data)), "hash", false},
			{"hash mismatch, size unknown", blobs.KindCode, otherHash, data, -1, "hash", false},
			{"body shorter than declared", blobs.KindCode, hash, data, int64(len(data)) + 1, "body", false},
			// The first bytes, as many as declared, do not match either.
			{"body longer than declared", blobs.KindCode, hash, data, int64(len(data)) - 1, "", false},
			{"declared too large", blobs.KindCode, bigHash, big, int64(len(big)), "body", true},
			{"too large, size unknown", blobs.KindCode, bigHash, big, -1, "body", true},
			{"unknown kind", "image", hash, data, -1, "kind", false},
			{"bad hash", blobs.KindCode, strings.ToUpper(hash), data, -1, "hash", false},
		} {
			_, err := w.store.Put(ctx, tc.kind, tc.hash, bytes.NewReader(tc.body), tc.size)
			fs := fault.Classify(err)
			if len(fs) != 1 || fs[0].Code != fault.BadUserInput || (tc.field != "" && fs[0].Field != tc.field) {
				t.Errorf("%s: %v, want BAD_USER_INPUT on %s", tc.name, err, tc.field)
			}
			if errors.As(err, &tooLarge) != tc.large {
				t.Errorf("%s: %v, too large %v", tc.name, err, !tc.large)
			}
		}
		if n := w.store.DB.Ent.Blob.Query().CountX(fixture.Sys()); n != 0 {
			t.Errorf("%d rows after refused uploads", n)
		}
		if files := w.files(t); len(files) != 0 {
			t.Errorf("refused uploads left %v", files)
		}
		// The payload limit is the payload's.
		if _, err := w.store.Put(ctx, blobs.KindPayload, bigHash, bytes.NewReader(big), -1); err != nil {
			t.Errorf("a payload under its limit: %v", err)
		}
	})
}

func TestViewerRequired(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		w := newWorld(t, url)
		data, hash := random(t, 10)
		if _, err := w.store.Put(context.Background(), blobs.KindCode, hash, bytes.NewReader(data), -1); code(err) != fault.Unauthenticated {
			t.Errorf("no viewer: %v", err)
		}
		if _, err := w.store.Has(fixture.Sys(), hash); code(err) != fault.Forbidden {
			t.Errorf("outside a tenant: %v", err)
		}
	})
}
