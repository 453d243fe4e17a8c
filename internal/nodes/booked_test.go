package nodes

import (
	"reflect"
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/inventory"
)

func TestUsage(t *testing.T) {
	t.Parallel()
	inv := inventory.Inventory{CPUs: 16, MemoryMiB: 65536, GPUs: []inventory.GPU{
		{Type: "H100", Count: 4, Devices: []string{"GPU-a", "GPU-b", "GPU-c", "GPU-d"}},
		{Type: "A10G", Count: 2}, // declared: indexes
	}}
	svcs := []*ent.Service{
		{CPU: 4, MemoryMib: 8192, Gpus: 2, GpuType: "H100", GpuDevices: []string{"GPU-c", "GPU-a"}},
		{CPU: 0.5, MemoryMib: 512},
		{CPU: 1, MemoryMib: 1024, Gpus: 1, GpuType: "A10G", GpuDevices: []string{"1"}},
		{CPU: 1, MemoryMib: 1024, Gpus: 1, GpuType: "L4"}, // a type the node no longer reports
	}
	got := usage(inv, heldBy(svcs...))
	want := Usage{
		Booked: Resources{CPU: 6.5, MemoryMiB: 10752, GPUs: []inventory.GPU{
			{Type: "H100", Count: 2, Devices: []string{"GPU-a", "GPU-c"}},
			{Type: "A10G", Count: 1, Devices: []string{"1"}},
			{Type: "L4", Count: 1},
		}},
		Free: Resources{CPU: 9.5, MemoryMiB: 54784, GPUs: []inventory.GPU{
			{Type: "H100", Count: 2, Devices: []string{"GPU-b", "GPU-d"}},
			{Type: "A10G", Count: 1, Devices: []string{"0"}},
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("usage =\n%+v\nwant\n%+v", got, want)
	}

	// Overbooked (the node reported less after a restart), and a booking
	// without devices: nothing free, devices unknown.
	got = usage(inventory.Inventory{CPUs: 1, MemoryMiB: 100, GPUs: []inventory.GPU{{Type: "H100", Count: 1}}},
		heldBy(&ent.Service{CPU: 2, MemoryMib: 200, Gpus: 2, GpuType: "H100"}))
	want = Usage{
		Booked: Resources{CPU: 2, MemoryMiB: 200, GPUs: []inventory.GPU{{Type: "H100", Count: 2}}},
		Free:   Resources{GPUs: []inventory.GPU{{Type: "H100"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("overbooked usage =\n%+v\nwant\n%+v", got, want)
	}
}

// heldBy is what svcs hold of their node, as HeldOn counts it.
func heldBy(svcs ...*ent.Service) *Held {
	h := &Held{}
	for _, s := range svcs {
		h.add(s)
	}
	return h
}
