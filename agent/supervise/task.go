// Package supervise is the supervisor of one service of the process
// runtime (agent/runtime): the small program every service's command is
// started under (see Supervise). It is a package of its own, importing
// little, because it is loaded on every service start: the runtime's
// imports (the tunnel's wire protocol, net/http and TLS through it) tripled
// the CPU a supervisor took to start.
package supervise

// Arg is the hidden subcommand of the levers9 binary that runs Supervise
// (cmd/levers9-supervise runs it without one).
const Arg = "__supervise"

// WarmArg starts a supervisor that waits for its Task.
const WarmArg = "-warm"

// Task is what a warm supervisor is told to run: the arguments it would
// otherwise have been started with, and the service's working directory
// and environment.
type Task struct {
	Args []string `json:"args"`
	Dir  string   `json:"dir"`
	Env  []string `json:"env"`
}

// Bind is a mount the supervisor binds into the service's working
// directory, in a mount namespace of the service's own (-binds).
type Bind struct {
	Src      string `json:"src"`
	Dst      string `json:"dst"`
	ReadOnly bool   `json:"ro,omitempty"`
}
