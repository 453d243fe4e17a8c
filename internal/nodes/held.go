package nodes

import (
	"context"
	"fmt"
	"slices"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/viewer"
)

// Held is what the services placed on one node hold of it. It is the one
// account of a node's usage: the scheduler places around it, the API and
// the dashboard show it (Usages).
type Held struct {
	CPU       float64
	MemoryMiB int64
	// GPUs counts the GPUs held per type, with or without known devices;
	// nil when none.
	GPUs map[string]int
	// Devices are the GPU device IDs held per type, of the services that
	// named theirs; nil when none.
	Devices map[string][]string
	// Unnamed are the GPU types of which some are held without device IDs
	// (services placed before devices were booked).
	Unnamed map[string]bool
	// Ports are the host ports held: those asked for by number and those
	// the agent picked, so a later fixed port is none of them.
	Ports []int
}

// heldChunk bounds the node IDs of one IN list, well below both databases'
// parameter limits.
const heldChunk = 1000

// HeldOn reads what is held on the nodes ids, with one query per 1000
// nodes; a node holding nothing is absent from the map. A service holds its
// node from placement until it ends: pending (placed, about to start) or
// running. Services are read as the system whoever asks: a member may not
// see other users' jobs, but their capacity is taken all the same. c may be
// a transaction's client.
func HeldOn(ctx context.Context, c *ent.Client, ids []string) (map[string]*Held, error) {
	sys := viewer.SystemContext(ctx)
	out := map[string]*Held{}
	for part := range slices.Chunk(ids, heldChunk) {
		svcs, err := c.Service.Query().
			Where(service.NodeIDIn(part...), service.StatusIn(service.StatusPending, service.StatusRunning)).
			Select(service.FieldNodeID, service.FieldCPU, service.FieldMemoryMib, service.FieldGpus, service.FieldGpuType,
				service.FieldGpuDevices, service.FieldPorts, service.FieldHostPorts).
			All(sys)
		if err != nil {
			return nil, fmt.Errorf("loading what is held on %d nodes: %w", len(part), err)
		}
		for _, s := range svcs {
			h := out[s.NodeID]
			if h == nil {
				h = &Held{}
				out[s.NodeID] = h
			}
			h.add(s)
		}
	}
	return out, nil
}

// add counts what service s holds.
func (h *Held) add(s *ent.Service) {
	h.CPU += s.CPU
	h.MemoryMiB += s.MemoryMib
	if s.Gpus > 0 {
		if h.GPUs == nil {
			h.GPUs = map[string]int{}
		}
		h.GPUs[s.GpuType] += s.Gpus
		if len(s.GpuDevices) > 0 {
			if h.Devices == nil {
				h.Devices = map[string][]string{}
			}
			h.Devices[s.GpuType] = append(h.Devices[s.GpuType], s.GpuDevices...)
		}
		if len(s.GpuDevices) != s.Gpus {
			if h.Unnamed == nil {
				h.Unnamed = map[string]bool{}
			}
			h.Unnamed[s.GpuType] = true
		}
	}
	h.Ports = appendPorts(h.Ports, s.Ports)
	h.Ports = appendPorts(h.Ports, s.HostPorts)
}

// appendPorts adds the host ports of ps given by number (in range) to to.
func appendPorts(to []int, ps []jobspec.Port) []int {
	for _, p := range ps {
		if p.Port > 0 && p.Port <= 65535 {
			to = append(to, p.Port)
		}
	}
	return to
}
