package scheduling

import "time"

// Resources is an amount of CPU, memory and GPUs.
type Resources struct {
	CPU       float64        // cores; fractions allowed
	MemoryMiB int64          //
	GPUs      map[string]int // GPU type → count
}

// Node is an online node of one queue with its capacity and what running
// jobs already use. Callers pass only nodes that may take jobs.
type Node struct {
	ID, Name string
	Capacity Resources
	Used     Resources
}

// Job is a pending job: services that must run together on one node.
type Job struct {
	ID        string
	Priority  int // higher runs first
	Submitted time.Time
	Services  []Service
}

// Service is one container of a job and what it asks for.
type Service struct {
	Name      string
	CPU       float64
	MemoryMiB int64
	GPUs      int
	// GPUTypes is a type, or a preference list: the first type with enough
	// free GPUs wins.
	GPUTypes []string
}

// Placement puts a job on a node.
type Placement struct {
	JobID, NodeID string
	// GPUType is the type chosen for each service with GPUs, by service
	// name; nil when no service asks for GPUs.
	GPUType map[string]string
}
