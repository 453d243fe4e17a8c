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
	var r reach
	var err error
	if st.Kind == storage.KindNode {
		if st.NodeID == "" {
			return false, nil
		}
		r.nodes, err = c.Queue.QueryNodes(q).Where(node.ID(st.NodeID)).IDs(ctx)
	} else {
		r.storages, err = c.Queue.QueryStorages(q).IDs(ctx)
	}
	if err != nil {
		return false, fmt.Errorf("reading what queue %s reaches: %w", q.ID, err)
	}
	return r.reaches(st), nil
}

// reach is what a queue's jobs reach: the storages it lists and its nodes.
type reach struct{ storages, nodes []string }

// queueReach reads all that queue q reaches, for checking many storages.
func queueReach(ctx context.Context, c *ent.Client, q *ent.Queue) (reach, error) {
	var r reach
	var err error
	if r.storages, err = c.Queue.QueryStorages(q).IDs(ctx); err != nil {
		return r, fmt.Errorf("listing storages of queue %s: %w", q.ID, err)
	}
	if r.nodes, err = c.Queue.QueryNodes(q).IDs(ctx); err != nil {
		return r, fmt.Errorf("listing nodes of queue %s: %w", q.ID, err)
	}
	return r, nil
}

// reaches is the rule: a node storage through its node, others when listed.
func (r reach) reaches(st *ent.Storage) bool {
	if st.Kind == storage.KindNode {
		return st.NodeID != "" && slices.Contains(r.nodes, st.NodeID)
	}
	return slices.Contains(r.storages, st.ID)
}
