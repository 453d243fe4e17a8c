// Package inventory describes what a node offers: CPUs, memory and GPUs.
// Declared values (flags, like Slurm's gres.conf) win over detected ones.
package inventory

// Inventory is a node's capacity.
type Inventory struct {
	CPUs      float64 `json:"cpus"`
	MemoryMiB int64   `json:"memoryMiB"`
	GPUs      []GPU   `json:"gpus,omitempty"`
}

// GPU is a number of GPUs of one type on a node.
type GPU struct {
	Type  string `json:"type"`
	Count int    `json:"count"`
}
