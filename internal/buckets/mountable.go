package buckets

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/access"
	"github.com/levers9/levers9/internal/fault"
)

// Mountable lists the buckets the viewer may mount into jobs of queue ref
// (ID or name): those it may read, on a storage the queue reaches. The job
// form offers exactly these; submitJob applies the same rules.
func (f *Files) Mountable(ctx context.Context, ref string) ([]*ent.Bucket, error) {
	c := f.Ent
	q, err := c.Queue.Query().Where(queue.Or(queue.ID(ref), queue.Name(ref))).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, &fault.Error{Code: fault.NotFound, Field: "queue", Message: fmt.Sprintf("queue %q not found", ref)}
	}
	if err != nil {
		return nil, fmt.Errorf("looking up queue %q: %w", ref, err)
	}
	// Three queries however many buckets there are.
	readable, err := access.ReadableBuckets(ctx, c.Bucket.Query()).WithStorage().Order(ent.Asc("name")).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing buckets: %w", err)
	}
	r, err := queueReach(ctx, c, q)
	if err != nil {
		return nil, err
	}
	var out []*ent.Bucket
	for _, b := range readable {
		if r.reaches(b.Edges.Storage) {
			out = append(out, b)
		}
	}
	return out, nil
}
