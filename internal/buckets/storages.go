package buckets

import (
	"context"
	"path"
	"path/filepath"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
	store "github.com/levers9/levers9/storage"
)

// Storages creates storages with the settings each kind needs.
type Storages struct {
	// LocalRoot is the server directory local storages live under; local
	// storages cannot be created when it is empty.
	LocalRoot string
	// AllowPrivateS3 accepts S3 endpoints on loopback, link-local and
	// private addresses (the operator's --allow-private-s3).
	AllowPrivateS3 bool
}

// maxStoragePrice bounds the price of a TB-hour: anything above is a typo.
const maxStoragePrice = 1_000_000 * billing.Unit

// Create checks and stores a storage. A local storage's directory is chosen
// by the server (under LocalRoot), never by the client, so no one can point
// a storage at the server's own files.
func (s Storages) Create(ctx context.Context, c *ent.Client, in ent.CreateStorageInput) (*ent.Storage, error) {
	if err := checkPrice(in.PricePerTbHour); err != nil {
		return nil, err
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	switch in.Kind {
	case storage.KindS3:
		if err := s.checkEndpoint(ctx, str(in.Endpoint)); err != nil {
			return nil, err
		}
		if str(in.S3Bucket) == "" {
			return nil, fault.Invalid("s3Bucket", "an s3 storage needs the S3 bucket that holds it")
		}
		if in.NodeID != nil || str(in.Path) != "" {
			return nil, fault.Invalid("path", "an s3 storage has no node or path")
		}
	case storage.KindNode:
		if in.NodeID == nil {
			return nil, fault.Invalid("nodeID", "a node storage needs its node")
		}
		p := str(in.Path)
		if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
			return nil, fault.Invalid("path", "a node storage needs a clean absolute directory on the node")
		}
	case storage.KindLocal:
		if s.LocalRoot == "" {
			return nil, fault.Invalid("kind", "this server keeps no local storages")
		}
		if in.NodeID != nil || str(in.Path) != "" || str(in.Endpoint) != "" {
			return nil, fault.Invalid("path", "a local storage's directory is chosen by the server")
		}
		t, err := c.Tenant.Get(ctx, viewer.FromContext(ctx).TenantID)
		if err != nil {
			return nil, err
		}
		dir := filepath.Join(s.LocalRoot, t.Slug, in.Name)
		in.Path = &dir
	default:
		return nil, fault.Invalid("kind", "must be S3, NODE or LOCAL")
	}
	return c.Storage.Create().SetInput(in).Save(ctx)
}

// Update changes a storage's name, credentials or price; where its data
// lives is fixed at creation.
func (s Storages) Update(ctx context.Context, c *ent.Client, id string, in ent.UpdateStorageInput) (*ent.Storage, error) {
	if err := checkPrice(in.PricePerTbHour); err != nil {
		return nil, err
	}
	st, err := c.Storage.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if in.Path != nil || in.NodeID != nil || in.ClearNode {
		return nil, fault.Invalid("path", "a storage's path and node cannot change; create a new storage")
	}
	if in.Endpoint != nil {
		if st.Kind != storage.KindS3 {
			return nil, fault.Invalid("endpoint", "only an s3 storage has an endpoint")
		}
		if err := s.checkEndpoint(ctx, *in.Endpoint); err != nil {
			return nil, err
		}
	}
	return st.Update().SetInput(in).Save(ctx)
}

// checkEndpoint refuses an S3 endpoint that is not an http(s) URL or that
// points at an internal address the operator has not allowed.
func (s Storages) checkEndpoint(ctx context.Context, endpoint string) error {
	if err := store.CheckEndpoint(ctx, endpoint, s.AllowPrivateS3); err != nil {
		return fault.Invalid("endpoint", "%v", err)
	}
	return nil
}

func checkPrice(p *billing.Tokens) error {
	if p != nil && (*p < 0 || *p > maxStoragePrice) {
		return fault.Invalid("pricePerTbHour", "must be between 0 and %s tokens", maxStoragePrice)
	}
	return nil
}
