package scheduling

import (
	"fmt"
	"slices"
)

// Place finds the node for job among nodes, which it does not change. It
// returns ok=false and why when the job fits nowhere, and an error, with
// nothing placed, when the input is impossible (see ValidateJob and
// ValidateNode).
func Place(job Job, nodes []Node) (Placement, bool, Reason, error) {
	if err := validateInput([]Job{job}, nodes); err != nil {
		return Placement{}, false, Reason{}, fmt.Errorf("place job %q: %w", job.ID, err)
	}
	c, demands := newCluster(nodes, []Job{job})
	var s gpuSearch
	if f, ok := c.bestFit(&s, &demands[0]); ok {
		return c.take(&demands[0], f), true, Reason{}, nil
	}
	return Placement{}, false, c.explain(&s, &demands[0]), nil
}

// fit is a job on one node and how good a fit it is; lower is better,
// compared field by field.
type fit struct {
	node      *nodeState
	ranks     []int // per GPU service: preference rank of the type chosen
	held      int   // services whose image the node holds; more is better
	types     []int // per GPU service: the type index chosen
	leftTypes int   // free GPUs of the chosen types left after placing
	leftOther int   // free GPUs of other types
	leftCPU   int64
	leftMem   int64
}

func (a *fit) better(b *fit) bool {
	if c := slices.Compare(a.ranks, b.ranks); c != 0 {
		return c < 0
	}
	if a.held != b.held {
		return a.held > b.held
	}
	if a.leftTypes != b.leftTypes {
		return a.leftTypes < b.leftTypes
	}
	if a.leftOther != b.leftOther {
		return a.leftOther < b.leftOther
	}
	if a.leftCPU != b.leftCPU {
		return a.leftCPU < b.leftCPU
	}
	if a.leftMem != b.leftMem {
		return a.leftMem < b.leftMem
	}
	return a.node.id < b.node.id
}

// bestFit returns the best node for d given what is free now.
func (c *cluster) bestFit(s *gpuSearch, d *demand) (fit, bool) {
	var best, cur fit
	found := false
	s.startJob()
	for _, n := range c.nodes {
		if !n.eligible(d) || n.free.cpu < d.cpu || n.free.mem < d.mem || !n.free.portsFree(d.ports) || !s.assign(d, n.free.gpus) {
			continue
		}
		cur.node = n
		cur.ranks, cur.types = cur.ranks[:0], cur.types[:0]
		chosen := 0 // free GPUs of the chosen types, each type counted once
		for k, g := range d.gpu {
			t := g.types[s.choice[k]]
			cur.ranks = append(cur.ranks, s.choice[k])
			if !slices.Contains(cur.types, t) {
				chosen += n.free.gpus[t]
			}
			cur.types = append(cur.types, t)
		}
		cur.held = n.held(d.images)
		cur.leftTypes = chosen - d.gpus
		cur.leftOther = n.freeGPUs - chosen
		cur.leftCPU = n.free.cpu - d.cpu
		cur.leftMem = n.free.mem - d.mem
		if !found || cur.better(&best) {
			// Swap so the next candidate reuses the loser's slices.
			best, cur = cur, best
			found = true
		}
	}
	return best, found
}

// take subtracts a placed job from its node, booking its GPU devices
// and ports, and returns the placement.
func (c *cluster) take(d *demand, f fit) Placement {
	n := f.node
	n.free.cpu -= d.cpu
	n.free.mem -= d.mem
	p := Placement{JobID: d.job.ID, NodeID: n.id}
	if len(d.gpu) > 0 {
		p.GPUType = make(map[string]string, len(d.gpu))
		p.Devices = make(map[string][]string, len(d.gpu))
	}
	// Services in order, so the first GPU service gets the lowest devices.
	for k, g := range d.gpu {
		t := f.types[k]
		n.free.gpus[t] -= g.count
		n.freeGPUs -= g.count
		p.GPUType[g.service] = c.typeNames[t]
		p.Devices[g.service] = c.devicesOf(n, t).book(g.count)
	}
	if len(d.ports) > 0 {
		if n.free.taken == nil {
			n.free.taken = make(map[int]bool, len(d.ports))
		}
		for _, port := range d.ports {
			n.free.taken[port] = true
		}
	}
	return p
}
