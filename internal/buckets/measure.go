package buckets

import (
	"context"
	"errors"
	"fmt"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/bucket"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/internal/viewer"
)

// Measure sets every bucket's size to what its storage holds. Uploads keep
// sizes current, but jobs write linked buckets directly and operators may
// write S3 buckets behind levers9's back; the storage meter measures before
// it charges. Buckets on node storages are measured by their nodes (not
// yet: they keep the size they were given). A bucket that cannot be
// measured keeps its last size; the errors are returned together.
func (f *Files) Measure(ctx context.Context) (measured int, err error) {
	sys := viewer.SystemContext(ctx)
	all, err := f.Ent.Bucket.Query().
		Where(bucket.HasStorageWith(storage.KindIn(storage.KindLocal, storage.KindS3))).
		WithStorage().All(sys)
	if err != nil {
		return 0, fmt.Errorf("listing buckets to measure: %w", err)
	}
	var errs []error
	for _, b := range all {
		if err := f.measure(sys, b); err != nil {
			errs = append(errs, err)
			continue
		}
		measured++
	}
	return measured, errors.Join(errs...)
}

func (f *Files) measure(ctx context.Context, b *ent.Bucket) error {
	d, err := f.driver(b.Edges.Storage)
	if err != nil {
		return err
	}
	size, err := d.Size(ctx, Dir(b))
	if err != nil {
		return fmt.Errorf("measuring bucket %s: %w", b.Name, err)
	}
	if size == b.SizeBytes {
		return nil
	}
	if err := f.Ent.Bucket.UpdateOneID(b.ID).SetSizeBytes(size).Exec(ctx); err != nil {
		return fmt.Errorf("recording the size of bucket %s: %w", b.Name, err)
	}
	return nil
}
