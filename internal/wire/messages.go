package wire

import "time"

// Hello is the agent's first message on every connection: who it is, what
// the node offers and what it still runs (after a reconnect), so the server
// can reconcile. The protocol version travels in the envelope.
type Hello struct {
	NodeID       string           `json:"nodeId"`
	AgentVersion string           `json:"agentVersion"`
	Inventory    Inventory        `json:"inventory"`
	Running      []RunningService `json:"running,omitempty"`
}

// Inventory is a node's capacity. Same JSON shape as the server's
// inventory.Inventory.
type Inventory struct {
	CPUs      float64 `json:"cpus"`
	MemoryMiB int64   `json:"memoryMiB"`
	GPUs      []GPU   `json:"gpus,omitempty"`
	// Runtime is how the agent runs services: RuntimeDocker or
	// RuntimeProcess (empty: process, from older agents).
	Runtime string `json:"runtime,omitempty"`
}

// Runtimes an agent may report.
const (
	RuntimeDocker  = "docker"
	RuntimeProcess = "process"
)

// GPU is a number of GPUs of one type.
type GPU struct {
	Type  string `json:"type"`
	Count int    `json:"count"`
	// Devices are the IDs of these GPUs (nvidia-smi UUIDs, or indexes
	// when declared), Count of them or none.
	Devices []string `json:"devices,omitempty"`
}

// RunningService is a service the agent runs.
type RunningService struct {
	JobID     string    `json:"jobId"`
	Service   string    `json:"service"`
	Attempt   int       `json:"attempt,omitempty"` // 0: 1, from older agents
	PID       int       `json:"pid,omitempty"`
	StartedAt time.Time `json:"startedAt"`
	// In a Reconcile, where the job's stored log ends: the last sequence
	// number of the attempt and the time of this service's last line. An
	// agent that reattached to a job after a restart resumes its output
	// right after them, so nothing is lost or sent twice.
	LogSeq   uint64    `json:"logSeq,omitempty"`
	LastLine time.Time `json:"lastLine,omitzero"`
}

// Welcome accepts a hello.
type Welcome struct {
	HeartbeatIntervalMs int64 `json:"heartbeatIntervalMs"`
	// FenceAfterMs is how long the agent may go without reaching the
	// server before it freezes its jobs' services: shorter than the
	// server's node TTL plus grace, after which the server may start
	// another attempt of them elsewhere. The agent counts it from the
	// last heartbeat the server surely recorded (it answered after it)
	// and thaws the services the server still wants when it is back
	// (an outage of the server, not of the node). 0: never (older
	// servers).
	FenceAfterMs int64 `json:"fenceAfterMs,omitempty"`
}

// HeartbeatInterval is how often the agent must send a Heartbeat.
func (w Welcome) HeartbeatInterval() time.Duration {
	return time.Duration(w.HeartbeatIntervalMs) * time.Millisecond
}

// FenceAfter is FenceAfterMs as a duration (0: never).
func (w Welcome) FenceAfter() time.Duration {
	return time.Duration(w.FenceAfterMs) * time.Millisecond
}

// Heartbeat tells the server the node is alive.
type Heartbeat struct {
	Time time.Time `json:"time"`
}

// Start asks the agent to run a job. Starting a job the agent already runs
// is not an error: the agent keeps the running one (resends are harmless).
type Start struct {
	JobID string `json:"jobId"`
	// Attempt numbers the runs of a job (retries after a lost node); each
	// attempt numbers its log lines from 1. 0 means 1.
	Attempt int `json:"attempt,omitempty"`
	// Tenant is the ID of the job's tenant, for labelling what runs.
	Tenant         string         `json:"tenant,omitempty"`
	TimeoutSeconds int            `json:"timeoutSeconds,omitempty"` // 0 = none
	Services       []ServiceStart `json:"services"`
	Mounts         []Mount        `json:"mounts,omitempty"`
	// Runner, when set, makes the job a container of a function: the agent
	// puts the function's code and the levers9 package into it and gives
	// it a socket to the server (see Runner).
	Runner *Runner `json:"runner,omitempty"`
	// Build, when set, makes the job a blueprint build (see Build): its
	// one service's state and log are the build's.
	Build *Build `json:"build,omitempty"`
	// TraceParent, when the server traces, is the W3C traceparent of the
	// span that sent this Start: the agent's spans join the job's trace
	// under it. Empty: no trace (the agent may start its own).
	TraceParent string `json:"traceParent,omitempty"`
}

// Runner is what a function's container needs from its agent: the code
// package to fetch (by hash) and the identity its socket carries.
type Runner struct {
	ContainerID string `json:"containerId"`
	FunctionID  string `json:"functionId"`
	CodeHash    string `json:"codeHash"` // hex SHA-256 of the zip the SDK uploaded
	// Secrets names the secrets the function asks for: the agent fetches
	// their values (GET /agent/secrets) right before starting the
	// container and passes them as its environment; they are never part
	// of the job's stored spec.
	Secrets []string `json:"secrets,omitempty"`
}

// Mount puts a bucket at Path inside the job. With Link the bucket's files
// are already on the node, in that directory: the agent links it (copies
// it, when read-only); without, the agent syncs the bucket down through
// the server's files API before the job and, unless read-only, its changes
// back after.
type Mount struct {
	Bucket   string `json:"bucket"` // bucket ID
	Path     string `json:"path"`
	ReadOnly bool   `json:"readOnly,omitempty"`
	Link     string `json:"link,omitempty"`
}

// ServiceStart is one service of a Start.
type ServiceStart struct {
	Name      string   `json:"name"`
	Image     string   `json:"image,omitempty"` // container runtimes only
	Command   []string `json:"command,omitempty"`
	Args      []string `json:"args,omitempty"`
	Env       []EnvVar `json:"env,omitempty"`
	Ports     []Port   `json:"ports,omitempty"`
	CPU       float64  `json:"cpu"`
	MemoryMiB int64    `json:"memoryMiB"`
	GPUs      []string `json:"gpus,omitempty"` // device IDs assigned by the scheduler
	// TTY runs the service's process on a pseudo-terminal that users
	// attach to through the relay; its output is also the service's log.
	TTY bool `json:"tty,omitempty"`
	// Venv, set only by the server for a service whose Image is a
	// blueprint's (see Venv), lets the process runtime run it in a cached
	// virtual environment instead; container runtimes ignore it.
	Venv *Venv `json:"venv,omitempty"`
}

// EnvVar is one environment variable.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Port is a named port of a service. In a Start, 0 lets the agent pick a
// free host port; in a StateChange it is the host port the service got.
type Port struct {
	Name string `json:"name"`
	Port int    `json:"port"`
}

// Stop asks the agent to stop a job: SIGTERM (or the runtime's equivalent),
// then a kill after GraceSeconds.
type Stop struct {
	JobID        string `json:"jobId"`
	Reason       string `json:"reason"`
	GraceSeconds int    `json:"graceSeconds"`
}

// State is the state of one service on the agent.
type State string

// Service states. EXITED means exited with code 0; any other end (non-zero
// exit, killed, stopped, failed to start) is FAILED, with ExitCode when the
// process had one and a Reason.
const (
	StateStarting State = "STARTING"
	StateRunning  State = "RUNNING"
	StateExited   State = "EXITED"
	StateFailed   State = "FAILED"
)

// Done reports whether s is a final state.
func (s State) Done() bool { return s == StateExited || s == StateFailed }

// StateChange reports a service's new state.
type StateChange struct {
	JobID    string    `json:"jobId"`
	Attempt  int       `json:"attempt,omitempty"` // 0 means 1
	Service  string    `json:"service"`
	State    State     `json:"state"`
	ExitCode *int      `json:"exitCode,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	Ports    []Port    `json:"ports,omitempty"` // host ports, with RUNNING
	Time     time.Time `json:"time"`
}

// Stream is where a log line was written.
type Stream string

// The streams of a service. System lines are levers9's own notes in the
// log (lines dropped over a quota, a long line split), never a job's output.
const (
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
	System Stream = "system"
)

// Logs carries output lines of one job, in sequence order.
type Logs struct {
	JobID   string    `json:"jobId"`
	Attempt int       `json:"attempt,omitempty"` // 0 means 1
	Lines   []LogLine `json:"lines"`
}

// LogLine is one line of output. Seq numbers the lines of a job across its
// services, from 1 without gaps, so the server can spot losses and
// duplicates.
type LogLine struct {
	Service string    `json:"service"`
	Stream  Stream    `json:"stream"`
	Seq     uint64    `json:"seq"`
	Time    time.Time `json:"time"`
	Text    string    `json:"text"`
}

// Reconcile tells a (re)connected agent which services the server believes
// run on its node. The agent stops jobs not listed and reports a final
// StateChange for listed services it no longer runs.
type Reconcile struct {
	Running []RunningService `json:"running,omitempty"`
}

// Ack acknowledges the message sent with envelope sequence number Seq. An
// empty Error means it was applied; otherwise it says why not.
type Ack struct {
	Seq   uint64 `json:"seq"`
	Error string `json:"error,omitempty"`
}

// RunnerOpen heads a stream the agent opens to the server for a
// connection a function's runner made on its socket; the server answers
// with a StreamReply, then serves the runner API (HTTP/1.1) on the
// stream. The server trusts the node only for jobs placed on it.
type RunnerOpen struct {
	JobID   string `json:"jobId"`
	Attempt int    `json:"attempt"`
	// Phases the agent saw while starting the container (node clock):
	// the Start arrived (the container was scheduled), the code was in
	// place, the runtime had the image and started the container.
	ScheduledAt   time.Time `json:"scheduledAt,omitzero"`
	CodeFetchedAt time.Time `json:"codeFetchedAt,omitzero"`
	ImageReadyAt  time.Time `json:"imageReadyAt,omitzero"`
}
