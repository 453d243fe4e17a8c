package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"unicode/utf8"
)

// maxAttachBehind is how far an attach may fall behind the service's
// output. One that falls further is detached (Wait gives errTooSlow)
// rather than let it hold up the service, its log or the other attaches;
// dropping output instead would leave its screen wrong without a word.
const maxAttachBehind = 1 << 20

// errTooSlow ends an attach that could not keep up with the output.
var errTooSlow = fmt.Errorf("detached: the terminal fell more than %d bytes behind the service's output", maxAttachBehind)

// ttyHub is the terminal of a service started with TTY: the agent holds
// its master, through which everything the service writes passes to the
// log (see service.start), to the attaches and to the replay.
type ttyHub struct {
	master *os.File
	slave  *os.File // until the service has it
	exited chan struct{}

	mu       sync.Mutex
	replay   []byte // the output's last ReplayBytes (up to twice that before trimming)
	attached map[*attachment]struct{}
	ended    bool // the output was read to the end
	code     *int // how the service ended, once exited is closed
	reason   string
}

func newTTYHub(u *jobUser) (*ttyHub, error) {
	master, slave, err := openPTY(Size{}, u)
	if err != nil {
		return nil, err
	}
	return &ttyHub{master: master, slave: slave, exited: make(chan struct{}), attached: map[*attachment]struct{}{}}, nil
}

// publish hands output to the replay and to every attach, never blocking.
func (h *ttyHub) publish(b []byte) {
	if len(b) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.remember(b)
	for a := range h.attached {
		if !a.push(b) {
			delete(h.attached, a)
		}
	}
}

func (h *ttyHub) remember(b []byte) {
	if len(b) >= ReplayBytes {
		h.replay = append(h.replay[:0], b[len(b)-ReplayBytes:]...)
		return
	}
	if len(h.replay)+len(b) > 2*ReplayBytes {
		h.replay = append(h.replay[:0], h.replay[len(h.replay)-(ReplayBytes-len(b)):]...)
	}
	h.replay = append(h.replay, b...)
}

// recent is the replay: the last ReplayBytes of output, from a character's
// start.
func (h *ttyHub) recent() []byte {
	r := h.replay[max(0, len(h.replay)-ReplayBytes):]
	for i := 0; i < len(r) && i < utf8.UTFMax && !utf8.RuneStart(r[0]); i++ {
		r = r[1:]
	}
	return append([]byte(nil), r...)
}

// outputEnded is called once the service's output was read to the end:
// attaches read what they have, then end of file.
func (h *ttyHub) outputEnded() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ended = true
	for a := range h.attached {
		a.end()
	}
}

// exit records how the service ended and releases the terminal.
func (h *ttyHub) exit(code *int, reason string) {
	h.mu.Lock()
	h.ended = true
	for a := range h.attached {
		a.end()
	}
	h.code, h.reason = code, reason
	h.mu.Unlock()
	close(h.exited)
	h.release()
}

// release closes the agent's ends of the terminal (attaches keep theirs).
func (h *ttyHub) release() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	closeAll(h.master, h.slave)
	h.master, h.slave = nil, nil
}

// slaveFile is the slave until the service has it; nil without a hub.
func (h *ttyHub) slaveFile() *os.File {
	if h == nil {
		return nil
	}
	return h.slave
}

// handOver closes the agent's copy of the slave once the service's
// process has its own: the master reads end of file only when no process
// holds the slave.
func (h *ttyHub) handOver() {
	h.mu.Lock()
	defer h.mu.Unlock()
	closeAll(h.slave)
	h.slave = nil
}

// attach joins the terminal: it starts with the replay.
func (h *ttyHub) attach(size Size) (*attachment, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended || h.master == nil {
		return nil, ErrNoService
	}
	in, err := dupPollable(h.master)
	if err != nil {
		return nil, fmt.Errorf("attaching: %w", err)
	}
	if size.Rows > 0 && size.Cols > 0 {
		if err := setSize(in, size); err != nil {
			_ = in.Close()
			return nil, fmt.Errorf("attaching: terminal size: %w", err)
		}
	}
	a := &attachment{hub: h, in: in, pending: h.recent(), closed: make(chan struct{}), slow: make(chan struct{})}
	a.more = sync.NewCond(&a.mu)
	h.attached[a] = struct{}{}
	return a, nil
}

func (h *ttyHub) detach(a *attachment) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.attached, a)
}

// attachment is one Attach: a Terminal on the service's terminal.
type attachment struct {
	hub       *ttyHub
	in        *os.File // a descriptor of the master of its own, for input and size
	closeOnce sync.Once
	closed    chan struct{}
	slow      chan struct{} // closed with err

	mu      sync.Mutex
	more    *sync.Cond
	pending []byte // output not yet read
	eof     bool   // the service's output ended
	gone    bool   // detached
	err     error  // errTooSlow
}

var _ Terminal = (*attachment)(nil)

// push queues output; false when the attach is over or too far behind.
func (a *attachment) push(b []byte) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.gone || a.err != nil {
		return false
	}
	if len(a.pending)+len(b) > maxAttachBehind {
		a.err = errTooSlow
		a.pending = nil
		close(a.slow)
		a.more.Broadcast()
		return false
	}
	a.pending = append(a.pending, b...)
	a.more.Broadcast()
	return true
}

func (a *attachment) end() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.eof = true
	a.more.Broadcast()
}

func (a *attachment) Read(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for len(a.pending) == 0 && !a.eof && !a.gone && a.err == nil {
		a.more.Wait()
	}
	if a.gone || a.err != nil || len(a.pending) == 0 {
		return 0, io.EOF
	}
	n := copy(p, a.pending)
	a.pending = a.pending[n:]
	if len(a.pending) == 0 {
		a.pending = nil
	}
	return n, nil
}

func (a *attachment) Stdin() io.WriteCloser { return ttyInput{a.in} }
func (a *attachment) Stdout() io.Reader     { return a }
func (a *attachment) Stderr() io.Reader     { return nil }

func (a *attachment) Resize(size Size) error {
	if err := setSize(a.in, size); err != nil {
		return fmt.Errorf("resizing the terminal: %w", err)
	}
	return nil
}

// Signal sends sig where a key would: to the terminal's foreground
// process group, which is always one of the service's session.
func (a *attachment) Signal(sig syscall.Signal) error {
	pgrp, err := foreground(a.in)
	if err != nil {
		return fmt.Errorf("signalling the terminal's foreground: %w", err)
	}
	if pgrp <= 1 {
		return fmt.Errorf("signalling the terminal's foreground: process group %d", pgrp)
	}
	if err := syscall.Kill(-pgrp, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signalling the terminal's foreground: %w", err)
	}
	return nil
}

// Wait returns the service's exit code once it ended, ErrDetached once
// the attach was closed, errTooSlow once it fell too far behind.
func (a *attachment) Wait(ctx context.Context) (int, error) {
	select {
	case <-a.hub.exited:
		return a.hub.result()
	default:
	}
	select {
	case <-a.hub.exited:
		return a.hub.result()
	case <-a.slow:
		return 0, errTooSlow
	case <-a.closed:
		return 0, ErrDetached
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (h *ttyHub) result() (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.code == nil {
		return 0, fmt.Errorf("the service ended without an exit code: %s", h.reason)
	}
	return *h.code, nil
}

// Close detaches: the service runs on.
func (a *attachment) Close() error {
	a.closeOnce.Do(func() {
		a.hub.detach(a)
		a.mu.Lock()
		a.gone, a.pending = true, nil
		a.more.Broadcast()
		a.mu.Unlock()
		_ = a.in.Close()
		close(a.closed)
	})
	return nil
}

// ttyInput is a terminal's input: closing it sends nothing (a user types
// Ctrl-D for end of file).
type ttyInput struct{ f *os.File }

func (t ttyInput) Write(b []byte) (int, error) { return t.f.Write(b) }
func (t ttyInput) Close() error                { return nil }

// teeReader hands what it reads to tee as well.
type teeReader struct {
	r   io.Reader
	tee func([]byte)
}

func (t teeReader) Read(b []byte) (int, error) {
	n, err := t.r.Read(b)
	t.tee(b[:n])
	return n, err
}
