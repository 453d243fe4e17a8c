// Package runtime runs the services of a job on a node. A Runtime starts
// jobs; a Job reports what its services do as Events, in order, and ends
// with a Result. Process runs services as child processes; the docker
// subpackage runs them as containers.
package runtime

import (
	"context"
	"time"

	"github.com/levers9/levers9/internal/wire"
)

// Runtime starts jobs.
type Runtime interface {
	// Start prepares spec and starts its services in the background. An
	// error means nothing runs (bad spec, job already running, no working
	// directory); a service that cannot start is reported as a FAILED event
	// instead. ctx bounds the preparation only: the job runs until it ends
	// or is stopped.
	Start(ctx context.Context, spec JobSpec) (Job, error)
	// Name is what the node reports: "docker" or "process".
	Name() string
}

// Recoverer is a runtime whose jobs outlive the agent (containers). After
// a restart the agent asks it for what still runs, reports that to the
// server, and resumes each job the server still wants from where its
// stored log ends; the others it stops.
type Recoverer interface {
	// Recover finds the jobs left running (or ended but not yet removed)
	// by an earlier agent. They emit nothing until Resume.
	Recover(ctx context.Context) ([]Recovered, error)
}

// Recovered is a job found again after an agent restart.
type Recovered interface {
	Job
	Attempt() int
	Services() []string
	// StartedAt is when the job's services started.
	StartedAt() time.Time
	// Resume starts the job's events: log lines after cursor (numbered
	// from cursor.Seq+1), then state changes as they happen. Called once;
	// Stop may come before it.
	Resume(cursor LogCursor)
}

// LogCursor is where the server's copy of a job's log ends.
type LogCursor struct {
	Seq uint64 // last sequence number stored for the attempt
	// After is, per service, the time of its last stored line: output at
	// or before it is not sent again.
	After map[string]time.Time
}

// Job is a started job.
type Job interface {
	ID() string
	// Events delivers state changes and log lines in the order they
	// happened and is closed after the last one. The caller must drain it
	// promptly: while it is full, the services' output is held back.
	Events() <-chan Event
	// Stop stops every service: SIGTERM, then SIGKILL after grace. It
	// returns at once, may be called any number of times from any
	// goroutine, and the first reason is the one recorded.
	Stop(reason string, grace time.Duration)
	// Done is closed when the job has ended (after Events is closed).
	Done() <-chan struct{}
	// Wait blocks until the job has ended and returns its result.
	Wait() Result
}

// Freezer is a job whose services can be frozen in place and thawed
// again: the agent freezes the jobs of a node cut off from the server
// before the server may start another attempt elsewhere, and thaws the
// ones the server still wants when it is back (a server outage, not a
// partition). Both runtimes' jobs are Freezers.
//
// A frozen service runs no code but keeps its processes, memory and
// output; it is not ended and reports nothing new until thawed. Stop of
// a frozen job does not wait out a grace: its services are killed at
// once and thawed so that the kill lands. Freeze and Thaw may be called
// any number of times; a service that starts while its job is frozen is
// frozen as it starts.
type Freezer interface {
	Freeze(ctx context.Context) error
	Thaw(ctx context.Context) error
}

// JobSpec is what to run.
type JobSpec struct {
	ID       string
	Attempt  int           // 1 for the first run; container labels carry it
	Tenant   string        // tenant ID, for labels
	Timeout  time.Duration // from when all services started; 0 = none; on expiry the job is stopped with reason "timeout"
	Services []ServiceSpec
	Mounts   []Mount
}

// Mount makes directory Dir on the node appear at Path in every service.
// The process runtime, which has no filesystem of its own to mount into,
// links it at Path relative to each service's working directory (a mount at
// /data/in is ./data/in); container runtimes bind it at Path.
type Mount struct {
	Path     string // absolute, clean
	Dir      string
	ReadOnly bool // container runtimes bind it read-only
}

// ServiceSpec is one service of a job.
type ServiceSpec struct {
	Name    string
	Image   string // container runtimes only; Process ignores it
	Command []string
	Args    []string
	Env     []EnvVar
	// SystemEnv are variables the agent itself sets (a function
	// container's LEVERS9_RUNNER_SOCKET): not checked against the names
	// reserved for levers9, and they win over Env.
	SystemEnv []EnvVar
	Ports     []Port // Port 0: the runtime picks a free host port
	CPU       float64
	MemoryMiB int64
	GPUs      []string // device IDs booked for this service
	// TTY runs the process on a pseudo-terminal (stdin open) that
	// Terminals.Attach joins; the terminal's output is the log (stdout).
	TTY bool
	// Venv, for a service whose Image is a blueprint of pip packages:
	// the process runtime runs it in that virtual environment, built
	// once per key and cached on the node; container runtimes ignore it.
	Venv *wire.Venv
}

// EnvVar is one environment variable.
type EnvVar struct {
	Name  string
	Value string
}

// Port is a named port of a service.
type Port struct {
	Name string
	Port int
}

// State is the state of a service.
type State string

// Service states; the same strings as the wire protocol's. EXITED is exit
// code 0; every other end is FAILED with a reason.
const (
	Starting State = "STARTING"
	Running  State = "RUNNING"
	Exited   State = "EXITED"
	Failed   State = "FAILED"
)

// Stream is where a log line was written.
type Stream string

// The output streams of a service.
const (
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
	// System lines are levers9's notes about the output (a long line
	// split), never the service's own.
	System Stream = "system"
)

// Event is a StateEvent or a LogEvent.
type Event interface{ event() }

// StateEvent is a service's new state.
type StateEvent struct {
	JobID    string
	Service  string
	State    State
	PID      int    // with RUNNING
	Ports    []Port // host ports, with RUNNING
	ExitCode *int   // with EXITED, and FAILED when the process had one (128+n when killed by signal n)
	Reason   string
	Time     time.Time
}

// LogEvent is one line of output. Seq numbers the lines of a job across all
// its services, from 1 without gaps.
type LogEvent struct {
	JobID   string
	Service string
	Stream  Stream
	Seq     uint64
	Time    time.Time
	Text    string // valid UTF-8, at most MaxLineBytes
}

func (StateEvent) event() {}
func (LogEvent) event()   {}

// MaxLineBytes is the longest log line; longer output lines are split.
const MaxLineBytes = 64 << 10
