package runtime

import (
	"context"
	"errors"
	"io"
	"syscall"
)

// Terminals is implemented by jobs whose services can be reached with a
// terminal through the relay: attach to a service started with TTY, or
// exec a command next to a running service (like docker exec).
type Terminals interface {
	// Exec starts command in service's environment (its user, working
	// directory or container, variables and limits). The command's output
	// never goes to the job's log. ErrNoService when service is not
	// running.
	Exec(ctx context.Context, service string, req ExecRequest) (Terminal, error)
	// Attach joins the terminal of service, which must have been started
	// with TTY (ErrNoTTY otherwise). The Terminal's output begins with up
	// to ReplayBytes of what the service wrote before, so a prompt printed
	// before the attach is seen. Several attaches at once all see the
	// output and all may type.
	Attach(ctx context.Context, service string, size Size) (Terminal, error)
}

// ReplayBytes is how much earlier terminal output an attach starts with.
const ReplayBytes = 64 << 10

// ExecRequest is a command to run in a service.
type ExecRequest struct {
	Command []string // argv; Command[0] is looked up in the service's PATH
	TTY     bool     // a pseudo-terminal; otherwise pipes
	Size    Size     // with TTY
}

// Size is a terminal window size.
type Size struct {
	Rows, Cols uint16
}

// Terminal is an exec'd process or an attach.
type Terminal interface {
	// Stdin is the process's input. Closing it sends end-of-file (without
	// TTY) or does nothing (with TTY: type Ctrl-D).
	Stdin() io.WriteCloser
	// Stdout is the process's output; with TTY, everything it writes.
	// It returns io.EOF once the process ended (or the attach was
	// detached) and all output was read.
	Stdout() io.Reader
	// Stderr is nil with TTY.
	Stderr() io.Reader
	// Resize sets the window size (TTY only; otherwise a no-op).
	Resize(Size) error
	// Signal sends sig to the process (for exec without TTY; with TTY,
	// Ctrl-C is the byte 0x03 written to Stdin).
	Signal(sig syscall.Signal) error
	// Wait returns when the process ended, with its exit code (128+n when
	// killed by signal n). For an attach, the code is the service's, and
	// Wait also returns, with ErrDetached, once Close was called.
	Wait(ctx context.Context) (int, error)
	// Close detaches an attach (the service keeps running) or kills an
	// exec'd process. Safe to call more than once.
	Close() error
}

var (
	// ErrNoService: the job has no running service of that name.
	ErrNoService = errors.New("no running service of that name")
	// ErrNoTTY: attach to a service started without a terminal.
	ErrNoTTY = errors.New("the service was not started with a terminal (tty)")
	// ErrDetached is Wait's error after Close on an attach.
	ErrDetached = errors.New("detached")
)
