package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/levers9/levers9/agent/runtime"
)

// execStartWait bounds how long Exec waits for the daemon to start the
// command.
const execStartWait = 30 * time.Second

// startErrorBytes bounds the daemon's message about a command that could
// not start.
const startErrorBytes = 4 << 10

// Exec implements runtime.Terminals with a Docker exec: the command runs in
// the service's container with its environment, user and working
// directory.
//
// Docker cannot kill an exec'd process, so Close and Signal signal it from
// the host by the PID the daemon reports (through a pidfd, which cannot
// reach another process that reused the PID). That works for any image,
// even one without a shell or kill, and signals exactly the command, where
// wrapping it in `sh -c` would need a shell in the image; it needs the
// agent in the daemon's PID namespace, which the runtime assumes already
// (ports are published on, and relayed from, the node's loopback). The
// process's cgroup must name the container, so an agent elsewhere gets an
// error rather than signal a stranger.
//
// A command that cannot start (not found, not executable) is an error
// carrying the daemon's message; Docker records exit code 127 or 126 for
// it.
func (j *job) Exec(ctx context.Context, name string, req runtime.ExecRequest) (runtime.Terminal, error) {
	if len(req.Command) == 0 {
		return nil, errors.New("exec: no command given")
	}
	_, id, _, err := j.runningService(name)
	if err != nil {
		return nil, err
	}
	cli := j.rt.cli
	var size client.ConsoleSize
	if req.TTY && req.Size.Rows > 0 && req.Size.Cols > 0 {
		size = client.ConsoleSize{Height: uint(req.Size.Rows), Width: uint(req.Size.Cols)}
	}
	created, err := cli.ExecCreate(ctx, id, client.ExecCreateOptions{
		TTY: req.TTY, ConsoleSize: size, Cmd: slices.Clone(req.Command),
		AttachStdin: true, AttachStdout: true, AttachStderr: true,
	})
	if cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) {
		return nil, fmt.Errorf("exec in service %s: %w (%v)", name, runtime.ErrNoService, err)
	}
	if err != nil {
		return nil, fmt.Errorf("exec in service %s: %w", name, err)
	}
	att, err := cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{TTY: req.TTY, ConsoleSize: size})
	if err != nil {
		return nil, fmt.Errorf("exec in service %s: %w", name, err)
	}
	t := &execTerm{rt: j.rt, service: name, execID: created.ID, tty: req.TTY, conn: att.HijackedResponse, outDone: make(chan struct{})}
	pid, err := t.started(ctx, req.Command[0])
	if err != nil {
		t.conn.Close()
		return nil, err
	}
	// A process that ended already is not found: then there is nothing to
	// signal anyway.
	t.proc, t.procErr = openHostProcess(pid, id)
	t.output()
	if req.TTY {
		// Daemons before API 1.42 ignore the size given at creation.
		_ = t.Resize(req.Size)
	}
	return t, nil
}

// execTerm is an exec'd command.
type execTerm struct {
	rt      *Runtime
	service string
	execID  string
	tty     bool
	conn    client.HijackedResponse

	stdout, stderr io.Reader
	outDone        chan struct{} // the output ended

	proc    *hostProcess // nil when it could not be opened: procErr
	procErr error

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// started waits until the daemon started the command and returns its PID
// on the host; an error with the daemon's message if it could not start.
func (t *execTerm) started(ctx context.Context, command string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, execStartWait)
	defer cancel()
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		res, err := t.rt.cli.ExecInspect(ctx, t.execID, client.ExecInspectOptions{})
		if err != nil {
			return 0, fmt.Errorf("exec %s in service %s: %w", command, t.service, err)
		}
		// The daemon sets Running before it starts the process and the PID
		// after; a start that failed leaves no PID and an exit code.
		switch {
		case res.PID != 0:
			return res.PID, nil
		case !res.Running && res.ExitCode != 0:
			return 0, t.startError(command, res.ExitCode)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("exec %s in service %s: the command did not start: %w", command, t.service, ctx.Err())
		case <-time.After(delay):
		}
	}
}

// startError reads what the daemon wrote about the failed start.
func (t *execTerm) startError(command string, code int) error {
	_ = t.conn.Conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	var msg bytes.Buffer
	r := io.LimitReader(t.conn.Reader, startErrorBytes)
	if t.tty {
		_, _ = io.Copy(&msg, r)
	} else {
		_, _ = stdcopy.StdCopy(&msg, &msg, r)
	}
	if text := strings.TrimSpace(msg.String()); text != "" {
		return fmt.Errorf("exec %s in service %s: %s", command, t.service, text)
	}
	return fmt.Errorf("exec %s in service %s: the command could not start (exit code %d)", command, t.service, code)
}

// output sets up Stdout and Stderr: raw with a terminal, else Docker's
// multiplexed stream taken apart.
func (t *execTerm) output() {
	if t.tty {
		t.stdout = &endReader{r: t.conn.Reader, t: t}
		return
	}
	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	t.stdout, t.stderr = outR, errR
	go func() {
		defer close(t.outDone)
		_, err := stdcopy.StdCopy(outW, errW, t.conn.Reader)
		if t.closed.Load() {
			err = nil // our own Close ended the stream
		}
		outW.CloseWithError(err)
		errW.CloseWithError(err)
	}()
}

// endReader notes the end of a terminal's output.
type endReader struct {
	r    io.Reader
	t    *execTerm
	once sync.Once
}

func (e *endReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(func() { close(e.t.outDone) })
		if e.t.closed.Load() {
			err = io.EOF
		}
	}
	return n, err
}

func (t *execTerm) Stdin() io.WriteCloser { return execInput{t} }
func (t *execTerm) Stdout() io.Reader     { return t.stdout }

func (t *execTerm) Stderr() io.Reader {
	if t.tty {
		return nil
	}
	return t.stderr
}

type execInput struct{ t *execTerm }

func (in execInput) Write(p []byte) (int, error) { return in.t.conn.Conn.Write(p) }

// Close sends end-of-file without a terminal; with one, end of input is
// Ctrl-D.
func (in execInput) Close() error {
	if in.t.tty {
		return nil
	}
	return in.t.conn.CloseWrite()
}

func (t *execTerm) Resize(size runtime.Size) error {
	if !t.tty || size.Rows == 0 || size.Cols == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(t.rt.ctx, terminalCallTimeout)
	defer cancel()
	_, err := t.rt.cli.ExecResize(ctx, t.execID, client.ExecResizeOptions{Height: uint(size.Rows), Width: uint(size.Cols)})
	if err != nil {
		return fmt.Errorf("resizing the terminal of the exec in %s: %w", t.service, err)
	}
	return nil
}

func (t *execTerm) Signal(sig syscall.Signal) error {
	if t.proc == nil {
		return t.unreachable()
	}
	return t.proc.signal(sig)
}

// unreachable is the error of a signal to a process the agent could not
// open, unless it ended.
func (t *execTerm) unreachable() error {
	ctx, cancel := context.WithTimeout(t.rt.ctx, terminalCallTimeout)
	defer cancel()
	res, err := t.rt.cli.ExecInspect(ctx, t.execID, client.ExecInspectOptions{})
	if err == nil && !res.Running {
		return nil
	}
	return fmt.Errorf("signalling the exec in %s: the agent cannot reach the process (it must run in the Docker daemon's PID namespace): %w", t.service, t.procErr)
}

// Wait returns the command's exit code once its output ended (128+n when
// killed by signal n).
func (t *execTerm) Wait(ctx context.Context) (int, error) {
	select {
	case <-t.outDone:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	// The daemon learns of the exit a moment after the output ends.
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 200*time.Millisecond) {
		res, err := t.rt.cli.ExecInspect(ctx, t.execID, client.ExecInspectOptions{})
		if err != nil {
			return 0, fmt.Errorf("exec in service %s: %w", t.service, err)
		}
		if !res.Running {
			return res.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(delay):
		}
	}
}

// Close kills the command with everything it started, and ends the
// output.
func (t *execTerm) Close() error {
	t.closeOnce.Do(func() {
		t.closed.Store(true)
		if t.proc != nil {
			t.closeErr = t.proc.kill()
			t.proc.release()
		} else {
			t.closeErr = t.unreachable()
		}
		t.conn.Close()
	})
	return t.closeErr
}
