package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/hashicorp/yamux"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/wire"
)

// streamHeaderTimeout bounds the wait for a stream's StreamOpen.
const streamHeaderTimeout = 15 * time.Second

// dialServiceTimeout bounds connecting to a service's port.
const dialServiceTimeout = 10 * time.Second

// streamTunnel keeps the stream tunnel (wire.StreamOpen) open while ctx
// lasts, reconnecting with backoff: relayed connections and terminals
// come through it, never through the job messages' connection.
func (a *Agent) streamTunnel(ctx context.Context) {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval = 200*time.Millisecond, 10*time.Second
	for ctx.Err() == nil {
		began := time.Now()
		err := a.streamSession(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(began) > time.Minute {
			b.Reset()
		}
		wait := b.NextBackOff()
		a.log.Warn("stream tunnel closed; reconnecting", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

func (a *Agent) streamSession(ctx context.Context) error {
	req, err := http.NewRequest(http.MethodGet, strings.TrimRight(a.st.Server, "/")+"/agent/streams", nil)
	if err != nil {
		return fmt.Errorf("stream tunnel request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+a.st.Credential)
	c, err := wire.DialStreams(ctx, a.cfg.Client, req)
	if err != nil {
		return fmt.Errorf("connecting the stream tunnel: %w", err)
	}
	defer c.Close()
	ys, err := yamux.Client(c, wire.YamuxConfig(a.log))
	if err != nil {
		return fmt.Errorf("starting the stream tunnel: %w", err)
	}
	defer ys.Close()
	// Function containers' connections open their streams on it.
	a.runners.session.Store(ys)
	defer a.runners.session.CompareAndSwap(ys, nil)
	var wg sync.WaitGroup
	defer wg.Wait()
	most := a.cfg.MaxStreams
	if most <= 0 {
		most = DefaultMaxStreams
	}
	slots := make(chan struct{}, most)
	for {
		st, err := ys.AcceptStream()
		if err != nil {
			return fmt.Errorf("stream tunnel: %w", err)
		}
		select {
		case slots <- struct{}{}:
		default:
			go refuseBusy(st, most)
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			a.serveStream(ctx, st)
		}()
	}
}

// serveStream answers one StreamOpen and serves the stream until either
// end closes it.
func (a *Agent) serveStream(ctx context.Context, st *yamux.Stream) {
	defer st.Close()
	_ = st.SetReadDeadline(time.Now().Add(streamHeaderTimeout))
	var open wire.StreamOpen
	if err := wire.ReadHeader(st, &open); err != nil {
		a.log.Warn("bad stream header", "err", err)
		return
	}
	_ = st.SetReadDeadline(time.Time{})
	if err := open.Validate(); err != nil {
		refuseStream(st, "BAD_USER_INPUT", err.Error())
		return
	}
	t := a.tasks.get(open.JobID)
	if t == nil || t.attempt != max(open.Attempt, 1) {
		refuseStream(st, "NOT_FOUND", "the job does not run on this node")
		return
	}
	switch open.Kind {
	case wire.StreamTCP:
		a.relayTCP(ctx, st, t, open)
	case wire.StreamCommit:
		a.commit(ctx, st, t, open)
	default:
		a.terminal(ctx, st, t, open)
	}
}

// commit snapshots a running service's file system: its container is
// committed to open.Image (paused meanwhile), exported and uploaded as the
// blueprint whose key is the image's tag; the reply comes once the server
// has it.
func (a *Agent) commit(ctx context.Context, st *yamux.Stream, t *task, open wire.StreamOpen) {
	t.mu.Lock()
	job := t.job
	t.mu.Unlock()
	c, ok := job.(runtime.Committer)
	switch {
	case job == nil:
		refuseStream(st, "NOT_FOUND", "the job has not started yet")
		return
	case !ok:
		refuseStream(st, "BAD_USER_INPUT", "snapshots need a container node")
		return
	}
	key := open.Image[strings.LastIndexByte(open.Image, ':')+1:]
	if !codeHashRE.MatchString(key) {
		refuseStream(st, "BAD_USER_INPUT", fmt.Sprintf("image %.100q has no blueprint key for a tag", open.Image))
		return
	}
	began := time.Now()
	tar, err := c.Commit(ctx, open.Service, open.Image)
	switch {
	case errors.Is(err, runtime.ErrNoService):
		refuseStream(st, "NOT_FOUND", fmt.Sprintf("service %s of the job is not running", open.Service))
		return
	case err != nil:
		refuseStream(st, "BAD_USER_INPUT", err.Error())
		return
	}
	err = a.uploadImage(ctx, open.JobID, key, tar, 1)
	_ = tar.Close()
	if err != nil {
		a.log.Warn("snapshot not uploaded", "job", open.JobID, "service", open.Service, "err", err)
		refuseStream(st, "UNAVAILABLE", fmt.Sprintf("the snapshot was taken but not uploaded: %v", err))
		return
	}
	a.log.Info("snapshot uploaded", "job", open.JobID, "service", open.Service, "image", open.Image, "took", time.Since(began).Round(time.Millisecond))
	_ = wire.WriteHeader(st, wire.StreamReply{})
}

// refuseBusy answers a stream over the node's limit.
func refuseBusy(st *yamux.Stream, most int) {
	defer st.Close()
	_ = st.SetDeadline(time.Now().Add(streamHeaderTimeout))
	var open wire.StreamOpen
	if wire.ReadHeader(st, &open) == nil {
		refuseStream(st, "UNAVAILABLE", fmt.Sprintf("the node has %d relayed connections and terminals open, its limit: close some", most))
	}
}

func refuseStream(st io.Writer, code, msg string) {
	_ = wire.WriteHeader(st, wire.StreamReply{Code: code, Error: msg})
}

// relayTCP connects the stream to a port of a running service of the job:
// never to any other address, whatever the server asks.
func (a *Agent) relayTCP(ctx context.Context, st *yamux.Stream, t *task, open wire.StreamOpen) {
	if !t.hasPort(open.Service, open.Port) {
		refuseStream(st, "NOT_FOUND", fmt.Sprintf("service %s of the job is not running with port %d", open.Service, open.Port))
		return
	}
	d := net.Dialer{Timeout: dialServiceTimeout}
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(runtime.ProcessHost, strconv.Itoa(open.Port)))
	if err != nil {
		refuseStream(st, "UNAVAILABLE", fmt.Sprintf("nothing answers on port %d of service %s: %v", open.Port, open.Service, err))
		return
	}
	defer c.Close()
	if err := wire.WriteHeader(st, wire.StreamReply{}); err != nil {
		return
	}
	pipe(st, c.(*net.TCPConn))
}

// pipeChunk is the most pipe sends at a time from a service, one stream
// frame: each frame costs two WebSocket messages and their system calls,
// and 128 KiB frames spend about a fifth less CPU per byte than
// io.Copy's 32 KiB (BenchmarkRelay in internal/relay). The struct wrapper
// hides TCPConn.WriteTo, which would copy in 32 KiB again.
const pipeChunk = 128 << 10

// halfCloser is a connection whose sending side closes alone (TCP, Unix).
type halfCloser interface {
	io.ReadWriter
	CloseWrite() error
}

// pipe copies both ways until both directions ended, passing each end of
// input on as a half-close.
func pipe(st *yamux.Stream, c halfCloser) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(c, st)
		_ = c.CloseWrite()
	}()
	_, _ = io.CopyBuffer(st, struct{ io.Reader }{c}, make([]byte, pipeChunk))
	_ = st.Close() // yamux's Close is a half-close: reading goes on
	<-done
}

// terminal serves an exec or an attach: frames in, frames out, the exit
// code last.
func (a *Agent) terminal(ctx context.Context, st *yamux.Stream, t *task, open wire.StreamOpen) {
	terms, ok := t.job.(runtime.Terminals)
	if t.job == nil || !ok {
		refuseStream(st, "BAD_USER_INPUT", "this node's runtime offers no terminals")
		return
	}
	size := runtime.Size{Rows: open.Rows, Cols: open.Cols}
	var term runtime.Terminal
	var err error
	if open.Kind == wire.StreamAttach {
		term, err = terms.Attach(ctx, open.Service, size)
	} else {
		term, err = terms.Exec(ctx, open.Service, runtime.ExecRequest{Command: open.Command, TTY: open.TTY, Size: size})
	}
	switch {
	case errors.Is(err, runtime.ErrNoService):
		refuseStream(st, "NOT_FOUND", fmt.Sprintf("service %s of the job is not running", open.Service))
		return
	case err != nil:
		refuseStream(st, "BAD_USER_INPUT", err.Error())
		return
	}
	defer term.Close()
	if err := wire.WriteHeader(st, wire.StreamReply{}); err != nil {
		return
	}
	a.log.Info("terminal opened", "job", open.JobID, "service", open.Service, "kind", open.Kind)
	w := &frameWriter{w: st}
	go func() {
		// The client's frames; when it goes away, an attach detaches and
		// an exec'd process is killed (term.Close).
		defer term.Close()
		buf := make([]byte, 0, wire.MaxFramePayload)
		for {
			typ, p, err := wire.ReadFrame(st, buf)
			if err != nil {
				return
			}
			switch typ {
			case wire.FrameStdin:
				if _, err := term.Stdin().Write(p); err != nil {
					return
				}
			case wire.FrameResize:
				if rows, cols, err := wire.ParseResize(p); err == nil {
					_ = term.Resize(runtime.Size{Rows: rows, Cols: cols})
				}
			case wire.FrameSignal:
				if len(p) == 1 {
					_ = term.Signal(syscall.Signal(p[0]))
				}
			case wire.FrameCloseStdin:
				_ = term.Stdin().Close()
			default:
				return // a client sends no other frames
			}
		}
	}()
	var out sync.WaitGroup
	copyOut := func(r io.Reader, typ byte) {
		defer out.Done()
		buf := make([]byte, wire.MaxFramePayload)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				if w.frame(typ, buf[:n]) != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	out.Add(1)
	go copyOut(term.Stdout(), wire.FrameStdout)
	if r := term.Stderr(); r != nil {
		out.Add(1)
		go copyOut(r, wire.FrameStderr)
	}
	out.Wait()
	code, err := term.Wait(ctx)
	switch {
	case errors.Is(err, runtime.ErrDetached):
	case err != nil:
		_ = w.frame(wire.FrameError, []byte(err.Error()))
	default:
		_ = w.frame(wire.FrameExit, wire.ExitPayload(code))
	}
}

// frameWriter writes whole frames from several goroutines.
type frameWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (f *frameWriter) frame(typ byte, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return wire.WriteFrame(f.w, typ, p)
}
