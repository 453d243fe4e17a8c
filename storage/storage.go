// Package storage keeps the files of buckets. A Driver stores objects of a
// bucket under that bucket's own prefix; keys are checked here, once, for
// every driver, so no key can address anything outside its bucket.
package storage

import (
	"context"
	"errors"
	"io"
	"time"
)

// Object describes a stored object.
type Object struct {
	Key      string
	Size     int64
	Modified time.Time
}

// ListOptions select a page of a bucket's objects in key order.
type ListOptions struct {
	Prefix string
	// After is the last key of the previous page; empty for the first.
	After string
	// Limit is the page size; 0 means DefaultPageSize.
	Limit int
}

// Page sizes.
const (
	DefaultPageSize = 1000
	MaxPageSize     = 10000
)

// Driver stores objects of buckets.
type Driver interface {
	// List returns a page of bucket's objects whose keys start with the
	// prefix, in key order.
	List(ctx context.Context, bucket string, opts ListOptions) ([]Object, error)
	Stat(ctx context.Context, bucket, key string) (Object, error)
	// Get streams an object; the caller closes the reader.
	Get(ctx context.Context, bucket, key string) (io.ReadCloser, Object, error)
	// Put stores r as key; size is -1 when unknown. An object is never
	// visible half-written: readers see the old one or the whole new one.
	Put(ctx context.Context, bucket, key string, r io.Reader, size int64) (Object, error)
	Delete(ctx context.Context, bucket, key string) error
	// Size is the number of bytes bucket holds, for storage metering.
	Size(ctx context.Context, bucket string) (int64, error)
}

// Errors drivers return.
var (
	ErrNotFound   = errors.New("no such object")
	ErrInvalidKey = errors.New("invalid object key")
	ErrInvalid    = errors.New("invalid bucket name or list options")
	// ErrOutside refuses a key that leads out of its bucket through a
	// symbolic link (to another bucket or anywhere else).
	ErrOutside = errors.New("symbolic link leads outside the bucket")
)
