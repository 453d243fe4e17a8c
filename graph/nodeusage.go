package graph

import (
	"context"
	"sync"

	"github.com/99designs/gqlgen/graphql"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/nodes"
)

// usageLoader remembers the booked and free resources of the nodes one
// operation asked about, so that a page of nodes costs one query, not one
// per node and field.
type usageLoader struct {
	mu  sync.Mutex
	got map[string]nodes.Usage
}

type usageLoaderKey struct{}

// withUsageLoader gives one operation its loader.
func withUsageLoader(ctx context.Context) context.Context {
	return context.WithValue(ctx, usageLoaderKey{}, &usageLoader{got: map[string]nodes.Usage{}})
}

// nodeUsage is n's usage. The first node of a list that asks loads the
// whole list (the nearest enclosing list or connection of nodes in the
// response); the others find theirs ready.
func (r *Resolver) nodeUsage(ctx context.Context, n *ent.Node) (nodes.Usage, error) {
	l, _ := ctx.Value(usageLoaderKey{}).(*usageLoader)
	if l == nil {
		m, err := r.NodeService.Usages(ctx, []*ent.Node{n})
		return m[n.ID], err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if u, ok := l.got[n.ID]; ok {
		return u, nil
	}
	batch := []*ent.Node{n}
	for _, s := range siblingNodes(ctx) {
		if _, ok := l.got[s.ID]; !ok && s.ID != n.ID {
			batch = append(batch, s)
		}
	}
	m, err := r.NodeService.Usages(ctx, batch)
	if err != nil {
		return nodes.Usage{}, err
	}
	for id, u := range m {
		l.got[id] = u
	}
	return m[n.ID], nil
}

// siblingNodes are the nodes of the nearest list of nodes above the field
// being resolved: a nodes connection, its edges, or an edge like
// queue.nodes.
func siblingNodes(ctx context.Context) []*ent.Node {
	for fc := graphql.GetFieldContext(ctx); fc != nil; fc = fc.Parent {
		switch v := fc.Result.(type) {
		case *ent.ComputeNodeConnection:
			if v != nil {
				return edgeNodes(v.Edges)
			}
		case []*ent.ComputeNodeEdge:
			return edgeNodes(v)
		case []*ent.Node:
			return v
		}
	}
	return nil
}

func edgeNodes(es []*ent.ComputeNodeEdge) []*ent.Node {
	out := make([]*ent.Node, 0, len(es))
	for _, e := range es {
		if e != nil && e.Node != nil {
			out = append(out, e.Node)
		}
	}
	return out
}
