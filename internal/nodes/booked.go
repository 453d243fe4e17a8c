package nodes

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/inventory"
	"github.com/levers9/levers9/internal/viewer"
)

// Resources are amounts of a node's capacity: booked by placed services,
// or free for more.
type Resources struct {
	CPU       float64
	MemoryMiB int64
	// GPUs per type, in the order of the node's inventory (types a node
	// no longer reports but still has booked come last). Devices are nil
	// when not known: services placed before devices were booked.
	GPUs []inventory.GPU
}

// Usage is what is booked on a node and what remains free.
type Usage struct {
	Booked, Free Resources
}

// chunk bounds the node IDs of one IN list.
const chunk = 500

// Usages computes booked and free resources of every node in ns with one
// query per 500 nodes: the services placed on them that are pending (about
// to start) or running hold their CPU, memory and GPU devices. The nodes
// must have been read as the viewer (that is where tenant isolation
// applies); services are read as the system, since a member may not see
// other users' jobs but their capacity is taken all the same.
func Usages(ctx context.Context, c *ent.Client, ns []*ent.Node) (map[string]Usage, error) {
	ids := make([]string, 0, len(ns))
	for _, n := range ns {
		ids = append(ids, n.ID)
	}
	byNode := map[string][]*ent.Service{}
	sys := viewer.SystemContext(ctx)
	for part := range slices.Chunk(ids, chunk) {
		svcs, err := c.Service.Query().
			Where(service.NodeIDIn(part...), service.StatusIn(service.StatusPending, service.StatusRunning)).
			Select(service.FieldNodeID, service.FieldCPU, service.FieldMemoryMib, service.FieldGpus,
				service.FieldGpuType, service.FieldGpuDevices).
			All(sys)
		if err != nil {
			return nil, fmt.Errorf("loading what is booked on %d nodes: %w", len(part), err)
		}
		for _, s := range svcs {
			byNode[s.NodeID] = append(byNode[s.NodeID], s)
		}
	}
	out := make(map[string]Usage, len(ns))
	for _, n := range ns {
		out[n.ID] = usage(n.Inventory, byNode[n.ID])
	}
	return out, nil
}

// usage is what svcs book of a node with inventory inv.
func usage(inv inventory.Inventory, svcs []*ent.Service) Usage {
	var u Usage
	type gpuBooking struct {
		count   int
		devices []string
		known   bool // every booking of this type named its devices
	}
	gpus := map[string]*gpuBooking{}
	var extraTypes []string
	for _, s := range svcs {
		u.Booked.CPU += s.CPU
		u.Booked.MemoryMiB += s.MemoryMib
		if s.Gpus == 0 {
			continue
		}
		g := gpus[s.GpuType]
		if g == nil {
			g = &gpuBooking{known: true}
			gpus[s.GpuType] = g
			extraTypes = append(extraTypes, s.GpuType)
		}
		g.count += s.Gpus
		g.devices = append(g.devices, s.GpuDevices...)
		if len(s.GpuDevices) != s.Gpus {
			g.known = false
		}
	}
	u.Free.CPU = max(inv.CPUs-u.Booked.CPU, 0)
	u.Free.MemoryMiB = max(inv.MemoryMiB-u.Booked.MemoryMiB, 0)
	inInventory := map[string]bool{}
	for _, have := range inv.GPUs {
		inInventory[have.Type] = true
		g := gpus[have.Type]
		if g == nil {
			g = &gpuBooking{known: true}
		}
		booked := inventory.GPU{Type: have.Type, Count: g.count}
		free := inventory.GPU{Type: have.Type, Count: max(have.Count-g.count, 0)}
		if g.known {
			booked.Devices = sorted(g.devices)
			taken := map[string]bool{}
			for _, d := range g.devices {
				taken[d] = true
			}
			for _, d := range have.DeviceIDs() {
				if !taken[d] && len(free.Devices) < free.Count {
					free.Devices = append(free.Devices, d)
				}
			}
		}
		u.Booked.GPUs = append(u.Booked.GPUs, booked)
		u.Free.GPUs = append(u.Free.GPUs, free)
	}
	for _, t := range extraTypes {
		if inInventory[t] {
			continue
		}
		g := gpus[t]
		b := inventory.GPU{Type: t, Count: g.count}
		if g.known {
			b.Devices = sorted(g.devices)
		}
		u.Booked.GPUs = append(u.Booked.GPUs, b)
	}
	return u
}

func sorted(ds []string) []string {
	out := append([]string{}, ds...)
	sort.Strings(out)
	return out
}
