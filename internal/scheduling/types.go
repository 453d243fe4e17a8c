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
	// Devices are the IDs of each GPU type's devices in inventory order,
	// Capacity.GPUs[type] of them; a type without a list has "0", "1", ….
	Devices map[string][]string
	// Booked are the devices of each type that services on the node hold.
	// Used.GPUs counts them and also GPUs held without a known device
	// (booked before devices were), so a type's free GPUs are the fewer of
	// its unbooked devices and its capacity minus Used.
	Booked map[string][]string
	// Ports are the host ports services on the node hold.
	Ports []int
	// Containers: the node runs images (a container runtime). Every node
	// runs command-only services.
	Containers bool
	// Images are images the node holds already (blueprint images, which
	// it would otherwise fetch through the server): a set, so order and
	// repeats do not matter. Among equally preferred nodes a job goes
	// where more of its services' images are.
	Images []string
}

// Job is a pending job: services that must run together on one node.
type Job struct {
	ID        string
	Priority  int // higher runs first
	Submitted time.Time
	Services  []Service
	// Pin, when its Node is set, is the only node the job may run on.
	Pin Pin
}

// Pin ties a job to one node, for a reason people should read: a bucket
// it mounts is on that node's disk.
type Pin struct {
	Node string // node ID
	Name string // node name for people; "" shows the ID
	Why  string // "bucket results is on its disk"
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
	// Image, when set, needs a node that runs containers, unless Venv.
	Image string
	// Venv: the image is a blueprint of pip packages that the process
	// runtime runs as a virtual environment, so a node without containers
	// may run the service too (still preferring nodes holding Image).
	Venv bool
	// Ports are the fixed host ports the service listens on (ports the
	// node picks are not listed): no two services of a node share one.
	Ports []int
}

// Placement puts a job on a node.
type Placement struct {
	JobID, NodeID string
	// GPUType is the type chosen for each service with GPUs, by service
	// name; nil when no service asks for GPUs.
	GPUType map[string]string
	// Devices are the GPU devices booked for each service with GPUs, by
	// service name: the lowest free ones of its type in inventory order.
	// nil when no service asks for GPUs.
	Devices map[string][]string
}
