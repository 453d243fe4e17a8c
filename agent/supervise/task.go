// Package supervise is the supervisor of the process runtime's services
// (agent/runtime): the small program every service's command is started
// under, one service after another (see Supervise). It is a package of its
// own, importing little, because it is loaded on every supervisor start:
// the runtime's imports (the tunnel's wire protocol, net/http and TLS
// through it) tripled the CPU a supervisor took to start.
package supervise

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Arg is the hidden subcommand of the levers9 binary that runs Supervise
// (cmd/levers9-supervise runs it without one).
const Arg = "__supervise"

// WarmArg starts a supervisor that waits for Tasks on its control socket
// (see SendTask).
const WarmArg = "-warm"

// Task is what a supervisor is told to run: its arguments (see
// Supervise), and the service's working directory and environment.
type Task struct {
	Args []string
	Dir  string
	Env  []string
}

// MarshalBinary encodes t as a supervisor reads it: NUL-terminated
// strings, which no argument, path or variable can hold (the kernel's exec
// takes C strings): the directory, the number of arguments, the
// arguments, then the environment to the end. Not JSON: perf profiles of
// BenchmarkTrivialJobs showed the supervisor's JSON decoding as a share
// of its start worth removing (a profile's share, not a benchmark figure).
func (t Task) MarshalBinary() ([]byte, error) {
	var b bytes.Buffer
	put := func(s string) bool {
		if strings.IndexByte(s, 0) >= 0 {
			return false
		}
		b.WriteString(s)
		b.WriteByte(0)
		return true
	}
	// An error names the string, never its value: a variable may hold a
	// secret, and the error reaches logs and the job's reason.
	if !put(t.Dir) {
		return nil, errors.New("task: the working directory holds a NUL byte")
	}
	put(strconv.Itoa(len(t.Args)))
	for i, a := range t.Args {
		if !put(a) {
			return nil, fmt.Errorf("task: argument %d holds a NUL byte", i)
		}
	}
	for _, kv := range t.Env {
		if !put(kv) {
			name, _, _ := strings.Cut(kv, "=")
			return nil, fmt.Errorf("task: variable %q holds a NUL byte", name)
		}
	}
	return b.Bytes(), nil
}

// UnmarshalBinary decodes what MarshalBinary encodes.
func (t *Task) UnmarshalBinary(data []byte) error {
	if len(data) == 0 {
		return errors.New("task: empty")
	}
	if data[len(data)-1] != 0 {
		return errors.New("task: its last string is not terminated")
	}
	parts := bytes.Split(data[:len(data)-1], []byte{0})
	if len(parts) < 2 {
		return errors.New("task: no argument count")
	}
	n, err := strconv.Atoi(string(parts[1]))
	if err != nil || n < 0 || n > len(parts)-2 || string(parts[1]) != strconv.Itoa(n) {
		return fmt.Errorf("task: bad argument count %q", parts[1])
	}
	strs := func(ps [][]byte) []string {
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = string(p)
		}
		return out
	}
	*t = Task{Dir: string(parts[0]), Args: strs(parts[2 : 2+n]), Env: strs(parts[2+n:])}
	return nil
}

// Bind is a mount the supervisor binds into the service's working
// directory, in a mount namespace of the service's own (-binds).
type Bind struct {
	Src      string `json:"src"`
	Dst      string `json:"dst"`
	ReadOnly bool   `json:"ro,omitempty"`
}
