// Package inventory describes what a node offers: CPUs, memory and GPUs.
// Declared values (flags, like Slurm's gres.conf) win over detected ones.
package inventory

import "strconv"

// Inventory is a node's capacity.
type Inventory struct {
	CPUs      float64 `json:"cpus"`
	MemoryMiB int64   `json:"memoryMiB"`
	GPUs      []GPU   `json:"gpus,omitempty"`
	// Runtime is how the node runs services: "docker" (containers: images,
	// hostnames, enforced limits) or "process" (child processes, no images).
	// Empty is an agent from before runtimes were reported: "process".
	Runtime string `json:"runtime,omitempty"`
}

// Runtimes a node may report.
const (
	RuntimeDocker  = "docker"
	RuntimeProcess = "process"
)

// NodeRuntime is inv's runtime, "process" when the agent did not say.
func (inv Inventory) NodeRuntime() string {
	if inv.Runtime == "" {
		return RuntimeProcess
	}
	return inv.Runtime
}

// Containers reports whether the node runs images.
func (inv Inventory) Containers() bool { return inv.NodeRuntime() == RuntimeDocker }

// GPU is a number of GPUs of one type on a node.
type GPU struct {
	Type  string `json:"type"`
	Count int    `json:"count"`
	// Devices are the IDs of the GPUs of this type, Count of them: what is
	// booked per service and handed to the runtime (CUDA_VISIBLE_DEVICES,
	// Docker device requests). nvidia-smi UUIDs when detected, indexes
	// ("0", "1", …) when declared. Empty from older agents: the scheduler
	// then numbers them 0..Count-1 itself.
	Devices []string `json:"devices,omitempty"`
}

// DeviceIDs are g's device IDs: its Devices, or indexes 0..Count-1 when it
// reported none.
func (g GPU) DeviceIDs() []string {
	if len(g.Devices) == g.Count {
		return g.Devices
	}
	ids := make([]string, g.Count)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}
	return ids
}
