// Package jobspec defines what a user submits (a job of services, mounts and
// resources) and checks it on its own, before any queue is consulted. The
// same types are the GraphQL input and the JSON stored on the job.
package jobspec

import "github.com/levers9/levers9/internal/wire"

// Job is a job specification.
type Job struct {
	Name           string    `json:"name"`
	Queue          string    `json:"queue"`             // queue ID or name
	Project        string    `json:"project,omitempty"` // project ID or name
	Interactive    bool      `json:"interactive,omitempty"`
	Priority       int       `json:"priority,omitempty"`
	TimeoutSeconds int       `json:"timeoutSeconds,omitempty"`
	Retries        int       `json:"retries,omitempty"`
	Services       []Service `json:"services"`
	Mounts         []Mount   `json:"mounts,omitempty"`
	// Runner is set only by the functions layer for a function's
	// container; no front door lets a user set it.
	Runner *wire.Runner `json:"runner,omitempty"`
	// Build is set only by the blueprints layer for a blueprint's build;
	// Sandbox only by the sandboxes layer. No front door sets either.
	Build   *wire.Build `json:"build,omitempty"`
	Sandbox bool        `json:"sandbox,omitempty"`
}

// Job kinds, as stored on the job (see Kind).
const (
	KindJob      = "JOB"
	KindFunction = "FUNCTION"
	KindBuild    = "BUILD"
	KindSandbox  = "SANDBOX"
)

// Kind is what made the job: a user's job, a function's container, a
// blueprint build or a sandbox.
func (j Job) Kind() string {
	switch {
	case j.Runner != nil:
		return KindFunction
	case j.Build != nil:
		return KindBuild
	case j.Sandbox:
		return KindSandbox
	}
	return KindJob
}

// Service is one container of a job.
type Service struct {
	Name      string   `json:"name"`
	Image     string   `json:"image,omitempty"`
	Command   []string `json:"command,omitempty"`
	Args      []string `json:"args,omitempty"`
	Env       []EnvVar `json:"env,omitempty"`
	CPU       float64  `json:"cpu"`
	MemoryMiB int64    `json:"memoryMiB"`
	GPUs      int      `json:"gpus,omitempty"`
	// GPUTypes is the GPU type, or a preference list: the first type with
	// enough free GPUs wins.
	GPUTypes []string `json:"gpuTypes,omitempty"`
	Ports    []Port   `json:"ports,omitempty"`
	// TTY starts the service with a terminal that users attach to
	// (levers9 attach); interactive jobs only.
	TTY bool `json:"tty,omitempty"`
	// Venv, set only by the blueprints layer (function containers and
	// sandboxes whose Image is a blueprint's that needs no more than pip
	// packages and variables), lets the service also run on a node
	// without containers, in a cached virtual environment. User specs
	// may not carry one (Validate).
	Venv *wire.Venv `json:"venv,omitempty"`
}

// EnvVar is one environment variable of a service.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Port is a port a service listens on; 0 lets the agent pick a free one.
type Port struct {
	Name string `json:"name"`
	Port int    `json:"port,omitempty"`
}

// Mount puts a bucket at a path inside the job.
type Mount struct {
	Bucket   string `json:"bucket"` // bucket ID or name
	Path     string `json:"path"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// SmallestRequest is the least CPU and the least memory any one service
// asks for (each its own least: the job needs at least both on a node).
func (j Job) SmallestRequest() (cpu float64, memoryMiB int64) {
	for i, s := range j.Services {
		if i == 0 || s.CPU < cpu {
			cpu = s.CPU
		}
		if i == 0 || s.MemoryMiB < memoryMiB {
			memoryMiB = s.MemoryMiB
		}
	}
	return cpu, memoryMiB
}

// TotalGPUs is the number of GPUs all services ask for.
func (j Job) TotalGPUs() int {
	n := 0
	for _, s := range j.Services {
		n += s.GPUs
	}
	return n
}
