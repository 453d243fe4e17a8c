package buckets

import (
	"context"
	"fmt"
	"slices"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/ent/storage"
)

// Reach is who can mount the buckets of a storage: the queues whose jobs
// can (the Reachable rule) and the nodes those jobs run on, by name.
type Reach struct {
	Queues, Nodes []string
}

// Preview says, writing nothing, which queues' jobs would reach storage st
// if the queues listedBy listed it (for a saved storage, the queues that
// list it; for one not saved yet, those its form names), and on which
// nodes. It reads the viewer's queues and their nodes in one query and its
// eager load, however many queues there are.
func Preview(ctx context.Context, c *ent.Client, st *ent.Storage, listedBy []string) (Reach, error) {
	qs, err := c.Queue.Query().WithNodes().Order(ent.Asc(queue.FieldName)).All(ctx)
	if err != nil {
		return Reach{}, fmt.Errorf("reading the queues a storage would reach: %w", err)
	}
	probe := *st
	if probe.ID == "" {
		probe.ID = "new storage" // not saved: listed only through listedBy
	}
	var out Reach
	for _, q := range qs {
		r := reach{}
		if slices.Contains(listedBy, q.ID) {
			r.storages = []string{probe.ID}
		}
		for _, n := range q.Edges.Nodes {
			r.nodes = append(r.nodes, n.ID)
		}
		if !r.reaches(&probe) {
			continue
		}
		out.Queues = append(out.Queues, q.Name)
		for _, n := range q.Edges.Nodes {
			if probe.Kind == storage.KindNode && n.ID != probe.NodeID {
				continue // a node storage is on its node only
			}
			if !slices.Contains(out.Nodes, n.Name) {
				out.Nodes = append(out.Nodes, n.Name)
			}
		}
	}
	slices.Sort(out.Nodes)
	return out, nil
}
