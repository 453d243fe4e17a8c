// Package blobs keeps content-addressed objects of tenants: the code
// packages of serverless apps and arguments and results too large to pass
// inline. A blob is named by the SHA-256 of its content, checked while it
// is stored; a tenant reads only the blobs it uploaded (its ent.Blob rows,
// which privacy filters by tenant), even when another tenant holds the
// same bytes.
package blobs

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/blob"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/storage"
)

// Bucket is the storage bucket holding every tenant's blobs, each tenant
// under its own prefix (see key).
const Bucket = "blobs"

// Kinds of blobs.
const (
	KindCode    = "code"
	KindPayload = "payload"
	// KindImage is a blueprint's exported image (docker save), stored by
	// the blueprints layer for the node that built it.
	KindImage = "image"
)

// DefaultLimits bound a blob of each kind, in bytes.
var DefaultLimits = map[string]int64{
	KindCode:    256 << 20,
	KindPayload: 256 << 20,
	KindImage:   16 << 30,
}

// Store keeps blobs in Driver and records them in DB.
type Store struct {
	DB     *database.DB
	Driver storage.Driver
	Log    *slog.Logger
	// Limits, when set, replace DefaultLimits (tests lower them); a kind
	// missing here is not accepted.
	Limits map[string]int64
}

// Put stores r, size bytes (-1: unknown) of kind, as the viewer's tenant's
// blob hash. It returns created false, reading nothing, when the tenant
// already has the blob. Content whose SHA-256 is not hash is refused
// (BAD_USER_INPUT on "hash") and leaves no row and no object; so is
// content over the kind's limit (*TooLargeError).
func (s *Store) Put(ctx context.Context, kind, hash string, r io.Reader, size int64) (bool, error) {
	limits := s.Limits
	if limits == nil {
		limits = DefaultLimits
	}
	limit, ok := limits[kind]
	if !ok {
		return false, fault.Invalid("kind", "a blob's kind is %q or %q, not %q", KindCode, KindPayload, kind)
	}
	if err := CheckHash(hash); err != nil {
		return false, err
	}
	if size > limit {
		return false, &TooLargeError{Kind: kind, Limit: limit}
	}
	tenantID, err := tenantOf(ctx)
	if err != nil {
		return false, err
	}
	has, err := s.Has(ctx, hash)
	if err != nil || has {
		return false, err
	}
	v := newVerifier(r, hash, kind, size, limit)
	obj, err := s.Driver.Put(ctx, Bucket, key(tenantID, hash), v, size)
	if v.err != nil {
		// The verdict, not the driver's wrapping of it.
		return false, v.err
	}
	if err != nil {
		return false, fmt.Errorf("storing blob %s: %w", hash, err)
	}
	if !v.passed() {
		// Only a driver that stopped reading early gets here; what it
		// stored is not known to be the content.
		if derr := s.Driver.Delete(ctx, Bucket, key(tenantID, hash)); derr != nil {
			s.Log.Error("deleting an unverified blob", "tenant", tenantID, "hash", hash, "err", derr)
		}
		return false, fmt.Errorf("storing blob %s: the storage stopped reading after %d bytes", hash, v.n)
	}
	err = s.DB.Ent.Blob.Create().SetTenantID(tenantID).SetHash(hash).SetSize(obj.Size).SetKind(kind).Exec(ctx)
	if ent.IsConstraintError(err) {
		// The same upload, twice at once: the other one recorded it, and
		// the object both wrote is the same bytes.
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("recording blob %s: %w", hash, err)
	}
	return true, nil
}

// Has reports whether the viewer's tenant has blob hash.
func (s *Store) Has(ctx context.Context, hash string) (bool, error) {
	if err := CheckHash(hash); err != nil {
		return false, err
	}
	tenantID, err := tenantOf(ctx)
	if err != nil {
		return false, err
	}
	b, err := s.find(ctx, tenantID, hash)
	return b != nil, err
}

// Lookup returns the viewer's tenant's record of blob hash: NOT_FOUND when
// it has none, whoever else has.
func (s *Store) Lookup(ctx context.Context, hash string) (*ent.Blob, error) {
	if err := CheckHash(hash); err != nil {
		return nil, err
	}
	tenantID, err := tenantOf(ctx)
	if err != nil {
		return nil, err
	}
	b, err := s.find(ctx, tenantID, hash)
	if err == nil && b == nil {
		return nil, notFound(hash)
	}
	return b, err
}

// find returns tenantID's blob hash, nil when it has none. Privacy filters
// by the viewer's tenant too; the tenant is spelled out for the unique
// index (tenant_id, hash), and for internal work in the system context.
func (s *Store) find(ctx context.Context, tenantID, hash string) (*ent.Blob, error) {
	b, err := s.DB.Ent.Blob.Query().Where(blob.TenantID(tenantID), blob.Hash(hash)).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("looking up blob %s of tenant %s: %w", hash, tenantID, err)
	}
	return b, nil
}

// Open streams the viewer's tenant's blob hash and returns its size.
func (s *Store) Open(ctx context.Context, hash string) (io.ReadCloser, int64, error) {
	b, err := s.Lookup(ctx, hash)
	if err != nil {
		return nil, 0, err
	}
	return s.open(ctx, b)
}

// OpenForTenant streams blob hash of tenantID, for internal work (a node
// fetching a function's code) that has already decided it may.
func (s *Store) OpenForTenant(ctx context.Context, tenantID, hash string) (io.ReadCloser, int64, error) {
	if err := CheckHash(hash); err != nil {
		return nil, 0, err
	}
	b, err := s.find(viewer.SystemContext(ctx), tenantID, hash)
	if err != nil {
		return nil, 0, err
	}
	if b == nil {
		return nil, 0, notFound(hash)
	}
	return s.open(ctx, b)
}

func (s *Store) open(ctx context.Context, b *ent.Blob) (io.ReadCloser, int64, error) {
	rc, obj, err := s.Driver.Get(ctx, Bucket, key(b.TenantID, b.Hash))
	if err != nil {
		// A row without its object: storage lost it or was swapped.
		return nil, 0, fmt.Errorf("opening blob %s of tenant %s: %w", b.Hash, b.TenantID, err)
	}
	return rc, obj.Size, nil
}

// tenantOf is the tenant the viewer in ctx acts in.
func tenantOf(ctx context.Context) (string, error) {
	v := viewer.FromContext(ctx)
	switch {
	case v == nil:
		return "", fault.New(fault.Unauthenticated, "sign in first")
	case !v.InTenant():
		return "", fault.New(fault.Forbidden, "blobs belong to a tenant: act in one first")
	}
	return v.TenantID, nil
}

func notFound(hash string) error {
	return fault.Missing(fmt.Sprintf("blob %s", hash))
}
