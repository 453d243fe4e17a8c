package nodes

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/viewer"
)

// Window is a span of time cut into equal steps (the bars of a chart).
type Window struct {
	From  time.Time
	Step  time.Duration
	Steps int
	// Now ends the last step early: time after it has not happened.
	Now time.Time
}

// LastHours is the window of the n whole hours up to now, the current hour
// (so far) last.
func LastHours(now time.Time, n int) Window {
	end := now.UTC().Truncate(time.Hour).Add(time.Hour)
	return Window{From: end.Add(-time.Duration(n) * time.Hour), Step: time.Hour, Steps: n, Now: now}
}

// End is when the window ends.
func (w Window) End() time.Time { return w.From.Add(time.Duration(w.Steps) * w.Step) }

// Starts are the steps' start times.
func (w Window) Starts() []time.Time {
	out := make([]time.Time, w.Steps)
	for i := range out {
		out[i] = w.From.Add(time.Duration(i) * w.Step)
	}
	return out
}

// Spread adds weight × the overlap of [from, to) with each step, as a
// fraction of the step (of its part before Now), to per: the average of
// something present from from to to, in each step.
func (w Window) Spread(per []float64, from, to time.Time, weight float64) {
	for i, s := range w.Starts() {
		e := s.Add(w.Step)
		if !w.Now.IsZero() && w.Now.Before(e) {
			e = w.Now
		}
		if !e.After(s) {
			continue
		}
		lo, hi := maxTime(from, s), minTime(to, e)
		if hi.After(lo) {
			per[i] += weight * float64(hi.Sub(lo)) / float64(e.Sub(s))
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

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
func (s *Service) GPUHistory(ctx context.Context, ns []*ent.Node, w Window) ([]GPUUse, error) {
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
func gpuHistory(ns []*ent.Node, svcs []*ent.Service, w Window) []GPUUse {
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
