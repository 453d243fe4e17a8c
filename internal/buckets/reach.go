// Package buckets decides which buckets a queue's jobs can mount.
package buckets

import (
	"context"
	"fmt"
	"slices"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/storage"
)

// Reachable reports whether jobs of queue q can mount a bucket on storage
// st: s3 and local storages when the queue lists them; a node storage only
// when the queue contains its node. It reads through c, which may be the
// client of the caller's transaction (a submission checks its mounts in the
// transaction that stores the job).
func Reachable(ctx context.Context, c *ent.Client, q *ent.Queue, st *ent.Storage) (bool, error) {
	switch st.Kind {
	case storage.KindNode:
		if st.NodeID == "" {
			return false, nil
		}
		ok, err := c.Queue.QueryNodes(q).Where(node.ID(st.NodeID)).Exist(ctx)
		if err != nil {
			return false, fmt.Errorf("checking node of storage %s: %w", st.ID, err)
		}
		return ok, nil
	default:
		ids, err := c.Queue.QueryStorages(q).IDs(ctx)
		if err != nil {
			return false, fmt.Errorf("listing storages of queue %s: %w", q.ID, err)
		}
		return slices.Contains(ids, st.ID), nil
	}
}
