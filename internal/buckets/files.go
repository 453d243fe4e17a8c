package buckets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/bucket"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/internal/access"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
	store "github.com/levers9/levers9/storage"
)

// Files reads and writes the objects of buckets for users, with the same
// access rules everywhere: readers of a bucket list and download, writers
// upload and delete.
type Files struct {
	Ent *ent.Client
	// Nodes, when set, reaches the files of node storages through their
	// node's tunnel.
	Nodes func(nodeID, root string) store.Driver
	// AllowPrivateS3 lets S3 storages connect to loopback, link-local and
	// private addresses (the operator's --allow-private-s3); off, every
	// connection to one is refused, whatever the endpoint's name resolved
	// to when it was saved.
	AllowPrivateS3 bool

	mu      sync.Mutex
	drivers map[string]store.Driver // by storage ID (and S3 settings)
}

// driver returns the storage driver of st.
func (f *Files) driver(st *ent.Storage) (store.Driver, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := st.ID
	if st.Kind == storage.KindS3 {
		// updateStorage may change these: the next use connects anew.
		key = strings.Join([]string{st.ID, st.Endpoint, st.Region, st.S3Bucket, st.AccessKeyID, st.SecretAccessKey}, "\n")
	}
	if d, ok := f.drivers[key]; ok {
		return d, nil
	}
	var (
		d   store.Driver
		err error
	)
	switch st.Kind {
	case storage.KindLocal:
		d, err = store.OpenLocal(st.Path)
	case storage.KindS3:
		d, err = store.OpenS3(store.S3Config{
			Endpoint: st.Endpoint, Region: st.Region, Bucket: st.S3Bucket,
			AccessKeyID: st.AccessKeyID, SecretAccessKey: st.SecretAccessKey,
			AllowPrivate: f.AllowPrivateS3,
		})
	case storage.KindNode:
		if f.Nodes == nil || st.NodeID == "" {
			return nil, fault.New(fault.BadUserInput, "storage %s is on a node: its files are reached by jobs on that node", st.Name)
		}
		d = f.Nodes(st.NodeID, st.Path)
	default:
		return nil, fmt.Errorf("storage %s: unknown kind %q", st.Name, st.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("opening storage %s: %w", st.Name, err)
	}
	if f.drivers == nil {
		f.drivers = map[string]store.Driver{}
	}
	f.drivers[key] = d
	return d, nil
}

// open finds bucket ref (ID or name) as the viewer sees it and checks read
// or write access.
func (f *Files) open(ctx context.Context, ref string, write bool) (*ent.Bucket, store.Driver, error) {
	b, err := f.Ent.Bucket.Query().Where(bucket.Or(bucket.ID(ref), bucket.Name(ref))).WithStorage().Only(ctx)
	if ent.IsNotFound(err) {
		return nil, nil, fault.Missing(fmt.Sprintf("bucket %q", ref))
	}
	if err != nil {
		return nil, nil, fmt.Errorf("looking up bucket %q: %w", ref, err)
	}
	ok, err := access.CanReadBucket(ctx, f.Ent, b.ID)
	if err == nil && ok && write {
		ok, err = access.CanWriteBucket(ctx, f.Ent, b.ID)
	}
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		verb := "read"
		if write {
			verb = "write"
		}
		return nil, nil, fault.New(fault.Forbidden, "none of your groups may %s bucket %s", verb, b.Name)
	}
	d, err := f.driver(b.Edges.Storage)
	return b, d, err
}

// Download streams an object; the caller closes it.
func (f *Files) Download(ctx context.Context, ref, key string) (io.ReadCloser, store.Object, error) {
	b, d, err := f.open(ctx, ref, false)
	if err != nil {
		return nil, store.Object{}, err
	}
	rc, obj, err := d.Get(ctx, Dir(b), key)
	return rc, obj, storageFault(err)
}

// Upload stores r as key (size -1 when unknown) and keeps the bucket's
// size for storage metering.
func (f *Files) Upload(ctx context.Context, ref, key string, r io.Reader, size int64) (store.Object, error) {
	b, d, err := f.open(ctx, ref, true)
	if err != nil {
		return store.Object{}, err
	}
	if err := store.CheckKey(key); err != nil {
		return store.Object{}, storageFault(err)
	}
	var old int64
	if o, err := d.Stat(ctx, Dir(b), key); err == nil {
		old = o.Size
	}
	obj, err := d.Put(ctx, Dir(b), key, r, size)
	if err != nil {
		return store.Object{}, storageFault(err)
	}
	return obj, f.grow(ctx, b, obj.Size-old)
}

// Delete removes an object.
func (f *Files) Delete(ctx context.Context, ref, key string) error {
	b, d, err := f.open(ctx, ref, true)
	if err != nil {
		return err
	}
	o, err := d.Stat(ctx, Dir(b), key)
	if err != nil {
		return storageFault(err)
	}
	if err := d.Delete(ctx, Dir(b), key); err != nil {
		return storageFault(err)
	}
	return f.grow(ctx, b, -o.Size)
}

// grow records a change of a bucket's size (what storage metering charges).
func (f *Files) grow(ctx context.Context, b *ent.Bucket, delta int64) error {
	if delta == 0 {
		return nil
	}
	err := f.Ent.Bucket.UpdateOneID(b.ID).AddSizeBytes(delta).Exec(viewer.SystemContext(ctx))
	if err != nil {
		return fmt.Errorf("recording size of bucket %s: %w", b.Name, err)
	}
	return nil
}

// storageFault gives storage errors their user-facing codes.
func storageFault(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return fault.Missing("object")
	case errors.Is(err, store.ErrInvalidKey), errors.Is(err, store.ErrInvalid), errors.Is(err, store.ErrOutside):
		return fault.Invalid("key", "%v", err)
	}
	return err
}
