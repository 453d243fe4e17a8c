package nodes

import (
	"context"
	"slices"
	"sort"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/inventory"
)

// Resources are amounts of a node's capacity: booked by placed services,
// or free for more.
type Resources struct {
	CPU       float64
	MemoryMiB int64
	// GPUs per type, in the order of the node's inventory (types a node
	// no longer reports but still has booked come last, by name). Devices
	// are nil when not known: services placed before devices were booked.
	GPUs []inventory.GPU
}

// Usage is what is booked on a node and what remains free.
type Usage struct {
	Booked, Free Resources
}

// Usages computes booked and free resources of every node in ns from what
// is held on them (HeldOn). The nodes must have been read as the viewer
// (that is where tenant isolation applies).
func (s *Service) Usages(ctx context.Context, ns []*ent.Node) (map[string]Usage, error) {
	ids := make([]string, 0, len(ns))
	for _, n := range ns {
		ids = append(ids, n.ID)
	}
	held, err := HeldOn(ctx, s.Ent, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Usage, len(ns))
	for _, n := range ns {
		out[n.ID] = usage(n.Inventory, held[n.ID])
	}
	return out, nil
}

// usage is what h holds of a node with inventory inv (nil h: nothing), and
// what remains free.
func usage(inv inventory.Inventory, h *Held) Usage {
	if h == nil {
		h = &Held{}
	}
	u := Usage{Booked: Resources{CPU: h.CPU, MemoryMiB: h.MemoryMiB}}
	u.Free.CPU = max(inv.CPUs-h.CPU, 0)
	u.Free.MemoryMiB = max(inv.MemoryMiB-h.MemoryMiB, 0)
	inInventory := map[string]bool{}
	for _, have := range inv.GPUs {
		inInventory[have.Type] = true
		count, devices := h.GPUs[have.Type], h.Devices[have.Type]
		booked := inventory.GPU{Type: have.Type, Count: count}
		free := inventory.GPU{Type: have.Type, Count: max(have.Count-count, 0)}
		// Devices are told only when every booking of the type named its.
		if !h.Unnamed[have.Type] {
			booked.Devices = sorted(devices)
			taken := map[string]bool{}
			for _, d := range devices {
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
	// Types the node no longer reports but still has booked come last, in
	// name order.
	var extra []string
	for t := range h.GPUs {
		if !inInventory[t] {
			extra = append(extra, t)
		}
	}
	slices.Sort(extra)
	for _, t := range extra {
		b := inventory.GPU{Type: t, Count: h.GPUs[t]}
		if !h.Unnamed[t] {
			b.Devices = sorted(h.Devices[t])
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
