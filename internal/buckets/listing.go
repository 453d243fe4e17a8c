package buckets

import (
	"context"
	"time"

	"github.com/levers9/levers9/internal/fault"
	store "github.com/levers9/levers9/storage"
)

// Object is a stored file of a bucket: its key, size and last change. It
// is the front doors' type (GraphQL binds BucketObject to it), so they need
// not import the storage drivers.
type Object struct {
	Key      string
	Size     int64
	Modified time.Time
}

// The page sizes of a listing are the storage drivers' own; the files API,
// GraphQL and the dashboard all page with these.
const (
	DefaultPageSize = store.DefaultPageSize
	MaxPageSize     = store.MaxPageSize
)

// ListOptions select a page of a bucket's objects in key order.
type ListOptions struct {
	// Prefix keeps the objects whose keys start with it.
	Prefix string
	// After is the Next of the previous page; empty for the first.
	After string
	// Limit is the page size, from PageSize; 0 means DefaultPageSize.
	Limit int
}

// Listing is a page of a bucket's objects.
type Listing struct {
	Objects []Object
	// Next is the After of the following page, or "" when this page is
	// the last: a page that came full may have more after it.
	Next string
}

// PageSize is the size of the page a caller asked for (nil: the
// default), refused with a BAD_USER_INPUT error naming arg, the caller's
// own name for it (first in GraphQL, limit in the files API), when a
// listing cannot give it.
func PageSize(arg string, asked *int) (int, error) {
	if asked == nil {
		return DefaultPageSize, nil
	}
	if *asked < 1 || *asked > MaxPageSize {
		return 0, fault.Invalid(arg, "must be between 1 and %d", MaxPageSize)
	}
	return *asked, nil
}

// List lists a page of bucket ref's objects.
func (f *Files) List(ctx context.Context, ref string, opts ListOptions) (Listing, error) {
	b, d, err := f.open(ctx, ref, false)
	if err != nil {
		return Listing{}, err
	}
	limit := opts.Limit
	if limit == 0 {
		limit = DefaultPageSize
	}
	objs, err := d.List(ctx, Dir(b), store.ListOptions{Prefix: opts.Prefix, After: opts.After, Limit: limit})
	if err != nil {
		return Listing{}, storageFault(err)
	}
	page := Listing{Objects: make([]Object, len(objs))}
	for i, o := range objs {
		page.Objects[i] = Object(o)
	}
	if len(objs) == limit {
		page.Next = objs[len(objs)-1].Key
	}
	return page, nil
}
