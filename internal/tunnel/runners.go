package tunnel

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/wire"
)

// Runners serves the connections function containers make to their
// agent's socket: the agent opens a stream of its stream tunnel for each,
// headed by a wire.RunnerOpen, and the stream then carries HTTP/1.1.
type Runners struct {
	// Identify says which container a stream comes from: the node is the
	// stream tunnel's, so a node speaks only for jobs placed on it. The
	// context it returns (derived from ctx) is every request's on the
	// stream. Its fault errors are sent to the agent with their code.
	Identify func(ctx context.Context, nodeID string, open wire.RunnerOpen) (context.Context, error)
	// Handler serves the runner API.
	Handler http.Handler
	// MaxStreams bounds a node's runner streams open at once;
	// 0: DefaultMaxRunnerStreams.
	MaxStreams int
}

// DefaultMaxRunnerStreams is Runners.MaxStreams's default.
const DefaultMaxRunnerStreams = 1024

// runnerHeaderTimeout bounds the wait for the agent's RunnerOpen.
const runnerHeaderTimeout = 15 * time.Second

// runnerIdleTimeout closes a runner's connection idle this long between
// requests; the runner reconnects.
const runnerIdleTimeout = 5 * time.Minute

// acceptAgentStreams serves the streams node nodeID's agent opens until
// the session ends: runner connections when s.Runners is set; refused
// otherwise.
func (s *Server) acceptAgentStreams(ctx context.Context, nodeID string, ys *yamux.Session, log *slog.Logger) {
	rs := s.Runners
	if rs == nil || rs.Identify == nil || rs.Handler == nil {
		for {
			st, err := ys.AcceptStream()
			if err != nil {
				return
			}
			go func() {
				defer st.Close()
				_ = st.SetDeadline(time.Now().Add(runnerHeaderTimeout))
				var open wire.RunnerOpen
				if wire.ReadHeader(st, &open) == nil {
					_ = wire.WriteHeader(st, wire.StreamReply{Code: string(fault.Unavailable), Error: "this server does not serve function containers"})
				}
			}()
		}
	}
	most := rs.MaxStreams
	if most <= 0 {
		most = DefaultMaxRunnerStreams
	}
	l := newStreamListener(ys.Addr())
	hs := &http.Server{
		Handler:           rs.Handler,
		ReadHeaderTimeout: runnerHeaderTimeout,
		IdleTimeout:       runnerIdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnContext: func(_ context.Context, c net.Conn) context.Context {
			return c.(*runnerConn).ctx
		},
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = hs.Serve(l)
	}()
	defer func() {
		_ = hs.Close() // closes the listener and every connection
		<-served
		l.drain()
	}()
	slots := make(chan struct{}, most)
	for {
		st, err := ys.AcceptStream()
		if err != nil {
			return
		}
		select {
		case slots <- struct{}{}:
		default:
			go func() {
				defer st.Close()
				_ = st.SetDeadline(time.Now().Add(runnerHeaderTimeout))
				var open wire.RunnerOpen
				if wire.ReadHeader(st, &open) == nil {
					_ = wire.WriteHeader(st, wire.StreamReply{Code: string(fault.Unavailable),
						Error: fmt.Sprintf("the node has %d function container connections open, its limit", most)})
				}
			}()
			continue
		}
		go func() {
			// A refused stream gives its place back before its answer
			// goes out, so a runner that reads the refusal finds it free.
			c := identifyRunner(ctx, rs, nodeID, st, log, func() { <-slots })
			if c == nil {
				return
			}
			c.release = func() { <-slots }
			if !l.push(c) {
				_ = c.Close()
			}
		}()
	}
}

// identifyRunner reads a runner stream's header and answers it: a conn
// carrying the container's identity, or nil when refused (refuse runs
// first then).
func identifyRunner(ctx context.Context, rs *Runners, nodeID string, st *yamux.Stream, log *slog.Logger, refuse func()) *runnerConn {
	_ = st.SetDeadline(time.Now().Add(runnerHeaderTimeout))
	var open wire.RunnerOpen
	if err := wire.ReadHeader(st, &open); err != nil {
		refuse()
		log.Warn("bad runner stream header", "err", err)
		_ = st.Close()
		return nil
	}
	rctx, err := rs.Identify(ctx, nodeID, open)
	if err != nil {
		refuse()
		code, msg := string(fault.Internal), "internal error"
		if fe := fault.Classify(err); len(fe) > 0 {
			code, msg = string(fe[0].Code), fe[0].Error()
		} else {
			log.Error("identifying a function container", "job", open.JobID, "err", err)
		}
		_ = wire.WriteHeader(st, wire.StreamReply{Code: code, Error: msg})
		_ = st.Close()
		return nil
	}
	if err := wire.WriteHeader(st, wire.StreamReply{}); err != nil {
		refuse()
		_ = st.Close()
		return nil
	}
	_ = st.SetDeadline(time.Time{})
	return &runnerConn{Stream: st, ctx: rctx}
}

// runnerConn is an identified runner stream as the HTTP server's
// connection.
type runnerConn struct {
	*yamux.Stream
	ctx     context.Context
	once    sync.Once
	release func()
}

func (c *runnerConn) Close() error {
	err := c.Stream.Close()
	c.once.Do(func() {
		if c.release != nil {
			c.release()
		}
	})
	return err
}

// streamListener hands identified streams to an http.Server.
type streamListener struct {
	addr net.Addr
	ch   chan *runnerConn
	done chan struct{}
	once sync.Once
}

func newStreamListener(addr net.Addr) *streamListener {
	return &streamListener{addr: addr, ch: make(chan *runnerConn), done: make(chan struct{})}
}

// push offers c to the server; false once the listener is closed.
func (l *streamListener) push(c *runnerConn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *streamListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *streamListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// drain closes what was pushed but never accepted.
func (l *streamListener) drain() {
	_ = l.Close()
	for {
		select {
		case c := <-l.ch:
			_ = c.Close()
		default:
			return
		}
	}
}

func (l *streamListener) Addr() net.Addr { return l.addr }
