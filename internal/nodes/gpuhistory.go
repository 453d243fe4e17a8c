package nodes

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/timewindow"
	"github.com/levers9/levers9/internal/viewer"
)

// GPUUse is how many GPUs of one type of one node were booked in each
// step of a window, on average, beside how many the node has now.
type GPUUse struct {
	NodeID, Type string
	// Count is the node's GPUs of the type as its agent reports them now
	// (nodes keep no history of their inventory).
	Count int
	// Booked has one average per step of the window.
	Booked []float64
}

// GPUHistory reconstructs the GPUs booked on the nodes ns (read as the
// viewer: that is where tenant isolation applies) in each step of w, from
// their services' placement times: a service books its GPUs from when it
// was sent to its node (dispatched) or else started, until it finished (or
// now). Services are read as the system, capacity fields only, as HeldOn
// does: a member may not see other users' jobs, but their GPUs are taken
// all the same. One query per 1000 nodes. The result has one entry per
// node and GPU type it has or had booked, in the nodes' order, types by
// name.
func (s *Service) GPUHistory(ctx context.Context, ns []*ent.Node, w timewindow.Window) ([]GPUUse, error) {
	sys := viewer.SystemContext(ctx)
	ids := make([]string, len(ns))
	for i, n := range ns {
		ids[i] = n.ID
	}
	var svcs []*ent.Service
	for part := range slices.Chunk(ids, heldChunk) {
		got, err := s.Ent.Service.Query().
			Where(service.NodeIDIn(part...), service.GpusGT(0),
				service.Or(service.DispatchedAtLT(w.End()), service.StartedAtLT(w.End())),
				service.Or(service.FinishedAtIsNil(), service.FinishedAtGT(w.From))).
			Select(service.FieldNodeID, service.FieldGpus, service.FieldGpuType, service.FieldStatus,
				service.FieldDispatchedAt, service.FieldStartedAt, service.FieldFinishedAt).
			All(sys)
		if err != nil {
			return nil, fmt.Errorf("loading the GPU bookings of %d nodes: %w", len(part), err)
		}
		svcs = append(svcs, got...)
	}
	return gpuHistory(ns, svcs, w), nil
}

// gpuHistory spreads the bookings of svcs over w per node and type.
func gpuHistory(ns []*ent.Node, svcs []*ent.Service, w timewindow.Window) []GPUUse {
	type key struct{ node, typ string }
	booked := map[key][]float64{}
	for _, sv := range svcs {
		from := sv.DispatchedAt
		if from == nil {
			from = sv.StartedAt
		}
		if from == nil {
			continue
		}
		to := w.End()
		switch {
		case sv.FinishedAt != nil:
			to = *sv.FinishedAt
		case sv.Status != service.StatusPending && sv.Status != service.StatusRunning:
			continue // ended without an end time: no span to tell
		}
		k := key{sv.NodeID, sv.GpuType}
		if booked[k] == nil {
			booked[k] = make([]float64, w.Steps)
		}
		w.Spread(booked[k], *from, to, float64(sv.Gpus))
	}
	var out []GPUUse
	for _, n := range ns {
		types := map[string]int{}
		for _, g := range n.Inventory.GPUs {
			types[g.Type] += g.Count
		}
		for k := range booked {
			if k.node == n.ID {
				if _, ok := types[k.typ]; !ok {
					types[k.typ] = 0
				}
			}
		}
		names := make([]string, 0, len(types))
		for t := range types {
			names = append(names, t)
		}
		sort.Strings(names)
		for _, t := range names {
			b := booked[key{n.ID, t}]
			if b == nil {
				b = make([]float64, w.Steps)
			}
			out = append(out, GPUUse{NodeID: n.ID, Type: t, Count: types[t], Booked: b})
		}
	}
	return out
}
