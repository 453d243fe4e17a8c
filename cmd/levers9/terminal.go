package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/term"

	"github.com/levers9/levers9/internal/wire"
)

// termSize is a terminal window's size.
type termSize struct{ rows, cols uint16 }

// defaultSize is the size of a terminal whose size cannot be read.
var defaultSize = termSize{rows: 24, cols: 80}

// termSession pumps the frames of one exec or attach (wire.WriteFrame)
// between conn and the local streams.
type termSession struct {
	conn           io.ReadWriteCloser
	stdin          io.Reader // nil: no input (end of input is sent at once)
	stdout, stderr io.Writer
	resizes        <-chan termSize // window sizes to pass on
	signals        <-chan byte     // signal numbers to pass on (exec without TTY)
	detachKeys     bool            // Ctrl-P Ctrl-Q in stdin detaches
}

// termEnd is how a terminal session ended: the process's (or the
// service's) exit code, or the user detached.
type termEnd struct {
	code     int
	detached bool
}

// remoteError is a terminal the other side ended without an exit code
// (FrameError), with its reason.
type remoteError string

func (e remoteError) Error() string { return string(e) }

// errConnectionLost is a terminal whose connection ended before the
// process did.
var errConnectionLost = errors.New("the connection ended before the process did")

// stdinChunk bounds one read of stdin: a held Ctrl-P may be added to it
// and the frame stays under wire.MaxFramePayload.
const stdinChunk = 16 << 10

// run pumps frames until the other side sends the exit code or an error,
// the user detaches, the connection breaks or ctx ends (which closes the
// connection: the server then detaches an attach or kills an exec).
func (s termSession) run(ctx context.Context) (termEnd, error) {
	var mu sync.Mutex
	send := func(typ byte, p []byte) error {
		mu.Lock()
		defer mu.Unlock()
		return wire.WriteFrame(s.conn, typ, p)
	}
	done := make(chan struct{})
	defer close(done)
	defer context.AfterFunc(ctx, func() { _ = s.conn.Close() })()

	var detached atomic.Bool
	// Left behind when the session ends while it waits for input: a read
	// of a terminal cannot be interrupted, and the process exits.
	go func() {
		if s.stdin == nil {
			_ = send(wire.FrameCloseStdin, nil)
			return
		}
		if s.copyStdin(send) {
			detached.Store(true)
			_ = s.conn.Close()
		}
	}()
	go func() {
		for {
			select {
			case <-done:
				return
			case sz := <-s.resizes:
				_ = send(wire.FrameResize, wire.ResizePayload(sz.rows, sz.cols))
			case sig := <-s.signals:
				_ = send(wire.FrameSignal, []byte{sig})
			}
		}
	}()

	stderr := s.stderr
	if stderr == nil {
		stderr = s.stdout
	}
	buf := make([]byte, 0, wire.MaxFramePayload)
	for {
		typ, p, err := wire.ReadFrame(s.conn, buf)
		if err != nil {
			switch {
			case detached.Load():
				return termEnd{detached: true}, nil
			case ctx.Err() != nil:
				return termEnd{}, ctx.Err()
			case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
				return termEnd{}, errConnectionLost
			}
			return termEnd{}, fmt.Errorf("reading the terminal: %w", err)
		}
		switch typ {
		case wire.FrameStdout:
			if _, err := s.stdout.Write(p); err != nil {
				return termEnd{}, fmt.Errorf("writing the output: %w", err)
			}
		case wire.FrameStderr:
			if _, err := stderr.Write(p); err != nil {
				return termEnd{}, fmt.Errorf("writing the output: %w", err)
			}
		case wire.FrameExit:
			code, err := wire.ParseExit(p)
			if err != nil {
				return termEnd{}, err
			}
			return termEnd{code: code}, nil
		case wire.FrameError:
			return termEnd{}, remoteError(p)
		default:
			return termEnd{}, fmt.Errorf("%w: type %d from the server", wire.ErrBadFrame, typ)
		}
	}
}

// copyStdin sends stdin as Stdin frames, then CloseStdin at its end. It
// reports whether the user typed the detach keys (nothing after them is
// sent).
func (s termSession) copyStdin(send func(byte, []byte) error) (detach bool) {
	var keys detachKeys
	buf := make([]byte, stdinChunk)
	for {
		n, err := s.stdin.Read(buf)
		if n > 0 {
			out := buf[:n]
			if s.detachKeys {
				out, detach = keys.scan(out)
			}
			if len(out) > 0 && send(wire.FrameStdin, out) != nil {
				return false
			}
			if detach {
				return true
			}
		}
		if err != nil {
			if keys.held {
				_ = send(wire.FrameStdin, []byte{ctrlP})
			}
			_ = send(wire.FrameCloseStdin, nil)
			return false
		}
	}
}

// The detach keys, as docker's: Ctrl-P then Ctrl-Q.
const (
	ctrlP = 0x10
	ctrlQ = 0x11
)

// detachKeys finds Ctrl-P Ctrl-Q in input read in chunks: a Ctrl-P is
// held back until the next byte says whether it was the start of the
// sequence (then neither is sent) or a key of its own (then it is sent).
type detachKeys struct {
	held bool // the last chunk ended with a Ctrl-P not yet sent
}

// scan returns what of p to send and whether the sequence is complete:
// then what came before it in p is returned, and the rest dropped.
func (d *detachKeys) scan(p []byte) (send []byte, detach bool) {
	send = make([]byte, 0, len(p)+1)
	for _, b := range p {
		if d.held {
			d.held = false
			if b == ctrlQ {
				return send, true
			}
			send = append(send, ctrlP)
		}
		if b == ctrlP {
			d.held = true
			continue
		}
		send = append(send, b)
	}
	return send, false
}

// errNotTTY is -t with an input that is not a terminal (docker's words).
var errNotTTY = errors.New("the input device is not a TTY: -t needs a terminal as standard input (drop -t to pipe input)")

// terminalFd is stdin's descriptor when stdin is a terminal.
func terminalFd(stdin io.Reader) (int, bool) {
	f, ok := stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0, false
	}
	return int(f.Fd()), true
}

// sizeOf is the window size of the terminal fd.
func sizeOf(fd int) termSize {
	cols, rows, err := term.GetSize(fd)
	if err != nil || rows <= 0 || cols <= 0 || rows > 0xffff || cols > 0xffff {
		return defaultSize
	}
	return termSize{rows: uint16(rows), cols: uint16(cols)}
}

// watchResize sends the window size of terminal fd now and whenever it
// changes (SIGWINCH) until ctx ends. Only the latest size waits to be
// sent: a burst of changes while dragging a window sends few frames.
func watchResize(ctx context.Context, fd int) <-chan termSize {
	sizes := make(chan termSize, 1)
	sizes <- sizeOf(fd)
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	go func() {
		defer signal.Stop(winch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-winch:
			}
			sz := sizeOf(fd)
			select {
			case <-sizes: // replaced by the newer size
			default:
			}
			sizes <- sz
		}
	}()
	return sizes
}

// terminalCall is one exec or attach from this process: how the local
// terminal takes part.
type terminalCall struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	tty            bool // the remote side has a terminal: its size is passed on
	input          bool // stdin is sent
	detachKeys     bool // Ctrl-P Ctrl-Q detaches (attach)
	// forwardInterrupt passes Ctrl-C (SIGINT) on to the process as a
	// Signal frame instead of ending the session (exec without TTY).
	forwardInterrupt bool
}

// dialTerminal opens the terminal's stream with the local window size.
type dialTerminal func(ctx context.Context, size termSize) (net.Conn, error)

// run opens the terminal with dial and runs the session. With a remote
// TTY and input, the local terminal is in raw mode while the session runs
// (keys, Ctrl-C included, go to the remote process) and restored on every
// way out; refusals are said before it is raw.
func (t terminalCall) run(ctx context.Context, dial dialTerminal) (termEnd, error) {
	fd, isTerminal := terminalFd(t.stdin)
	raw := t.tty && t.input
	if raw && !isTerminal {
		return termEnd{}, errNotTTY
	}
	size := defaultSize
	if isTerminal {
		size = sizeOf(fd)
	}

	var signals chan byte
	if t.forwardInterrupt {
		// The command's context ends with the first Ctrl-C (main's
		// signal.NotifyContext): the stream must outlive it. SIGTERM and
		// SIGHUP still end the session.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(context.WithoutCancel(ctx))
		defer cancel()
		signals = make(chan byte, 4)
		sigs := make(chan os.Signal, 4)
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		defer signal.Stop(sigs)
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case sig := <-sigs:
					if sig != os.Interrupt {
						cancel()
						return
					}
					select {
					case signals <- byte(syscall.SIGINT):
					default: // a burst of Ctrl-C: one is enough
					}
				}
			}
		}()
	}

	conn, err := dial(ctx, size)
	if err != nil {
		return termEnd{}, err
	}
	defer conn.Close()

	s := termSession{conn: conn, stdout: t.stdout, stderr: t.stderr, signals: signals, detachKeys: t.detachKeys && t.input}
	if t.input {
		s.stdin = t.stdin
	}
	if raw {
		state, err := term.MakeRaw(fd)
		if err != nil {
			return termEnd{}, fmt.Errorf("putting the terminal in raw mode: %w", err)
		}
		defer func() { _ = term.Restore(fd, state) }()
	}
	if t.tty && isTerminal {
		rctx, stop := context.WithCancel(ctx)
		defer stop()
		s.resizes = watchResize(rctx, fd)
	}
	return s.run(ctx)
}
