package graph

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/internal/viewer"
)

// Keep-alives: idle streams must outlive proxies' idle timeouts, and a
// client that stops answering pings is disconnected.
const (
	keepAlive       = 15 * time.Second
	wsInitTimeout   = 10 * time.Second
	defaultStallFor = 30 * time.Second
	// wsWriteGrace is how much longer than the follow's stall limit a
	// WebSocket write may block. A slow subscriber's follow gives up
	// first, so the RATE_LIMITED error is queued behind the lines it holds
	// and a client that does read, late, learns why its stream ended; one
	// that reads nothing is cut off when the grace runs out too. (SSE
	// cannot carry an error: its writes keep the stall limit, so a dropped
	// SSE stream is cut, never completed as if whole.)
	wsWriteGrace = 30 * time.Second
	// maxSubsPerConn bounds the subscriptions of one WebSocket, each of
	// which holds a buffer of lines.
	maxSubsPerConn = 100
)

// addStreamTransports adds the subscription transports. They must come
// before GET and POST, which would also claim their requests.
func addStreamTransports(srv *handler.Server, r *Resolver) {
	srv.AddTransport(transport.Websocket{
		InitFunc:              wsInit(r),
		InitTimeout:           wsInitTimeout,
		KeepAlivePingInterval: keepAlive, // graphql-ws
		PingPongInterval:      keepAlive, // graphql-transport-ws: no pong in 2 intervals closes
		PayloadReadLimit:      ptr(int64(MaxBodyBytes)),
	})
	srv.AddTransport(transport.SSE{KeepAlivePingInterval: keepAlive})
}

func ptr[T any](v T) *T { return &v }

// wsInit authenticates a WebSocket from the bearer token of its
// connection_init payload ({"Authorization": "Bearer …"}), or keeps the
// viewer Authenticate found in the upgrade request's header. Without either
// the connection stays anonymous and its subscriptions are refused like any
// anonymous request; a bad token closes it.
func wsInit(r *Resolver) transport.WebsocketInitFunc {
	return func(ctx context.Context, p transport.InitPayload) (context.Context, *transport.InitPayload, error) {
		ctx = context.WithValue(ctx, subsKey{}, new(atomic.Int32))
		authz := p.Authorization()
		if authz == "" {
			return ctx, nil, nil
		}
		// graphql-transport-ws closes refused connections with 4403.
		refused := transport.WithWebsocketCloseCode(ctx, 4403)
		secret, ok := auth.ParseBearer(authz)
		if !ok {
			return transport.AppendCloseReason(refused, "UNAUTHENTICATED: the Authorization value must be: Bearer TOKEN"), nil,
				errors.New("UNAUTHENTICATED: the Authorization value must be: Bearer TOKEN")
		}
		v, err := r.Auth.Authenticate(ctx, secret)
		if err != nil {
			msg := "INTERNAL: internal error"
			if fs := fault.Classify(err); len(fs) > 0 {
				msg = fmt.Sprintf("%s: %s", fs[0].Code, fs[0].Message)
			} else if o := fault.Outage(err); o != nil {
				msg = fmt.Sprintf("%s: %s", o.Code, o.Message)
				r.Log.Warn("authenticating a websocket: database unreachable", "err", err)
			} else {
				r.Log.Error("authenticating a websocket", "err", err)
			}
			return transport.AppendCloseReason(refused, msg), nil, errors.New(msg)
		}
		// The connection (and with it every subscription on it) closes
		// when this token ends; it is released when the connection does.
		held, _ := r.Auth.Hold(viewer.NewContext(ctx, v))
		return held, nil, nil
	}
}

// endWithToken ends every streaming request (a WebSocket and all its
// subscriptions, an SSE subscription) when the token it was opened with is
// revoked, signed out, moved out of its tenant or expires: a request is
// authenticated once, but a stream lives on. A WebSocket authenticated by
// its connection_init payload is held by wsInit instead.
func endWithToken(a *auth.Service, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !streaming(r) || viewer.FromContext(r.Context()) == nil {
			h.ServeHTTP(w, r)
			return
		}
		ctx, cancel := a.Hold(r.Context())
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// streaming reports whether r opens a stream: a WebSocket or SSE.
func streaming(r *http.Request) bool {
	return r.Header.Get("Upgrade") != "" || strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// requireSubscriber refuses anonymous subscriptions: gqlgen's root field
// interceptor (requireViewer) does not run for subscriptions.
func requireSubscriber(ctx context.Context) error {
	if viewer.FromContext(ctx) == nil {
		return fault.New(fault.Unauthenticated, "sign in first: send an API token as Authorization: Bearer TOKEN")
	}
	return nil
}

type subsKey struct{}

// followOptions are the resolver's follow options with the error reporting
// of the subscription in ctx. It counts the subscriptions of a WebSocket
// and refuses more than maxSubsPerConn; call the returned release when the
// follow could not start (OnDone releases it otherwise).
func (r *Resolver) followOptions(ctx context.Context) (joblog.Options, func(), error) {
	o := r.Follow
	o.Log = r.Log
	o.OnError = func(err error) { addSubscriptionError(ctx, r.streamError(err)) }
	release := func() {}
	if n, ok := ctx.Value(subsKey{}).(*atomic.Int32); ok {
		if n.Add(1) > maxSubsPerConn {
			n.Add(-1)
			return o, release, fault.New(fault.RateLimited, "at most %d subscriptions per connection", maxSubsPerConn)
		}
		release = func() { n.Add(-1) }
	}
	o.OnDone = release
	return o, release, nil
}

func (r *Resolver) streamError(err error) *gqlerror.Error {
	if errors.Is(err, joblog.ErrTooSlow) {
		return &gqlerror.Error{Message: err.Error(), Extensions: map[string]any{"code": fault.RateLimited}}
	}
	if fs := fault.Classify(err); len(fs) > 0 {
		return &gqlerror.Error{Message: fs[0].Error(), Extensions: map[string]any{"code": fs[0].Code}}
	}
	if o := fault.Outage(err); o != nil {
		return &gqlerror.Error{Message: o.Error(), Extensions: map[string]any{"code": o.Code, "retryAfter": o.RetryAfter()}}
	}
	return &gqlerror.Error{Message: "internal error", Extensions: map[string]any{"code": fault.Internal}}
}

// addSubscriptionError sends err to a WebSocket subscriber before its
// channel closes. gqlgen only supports that on WebSockets and panics on
// other transports (SSE), where the stream simply ends.
func addSubscriptionError(ctx context.Context, err *gqlerror.Error) {
	defer func() { _ = recover() }()
	transport.AddSubscriptionError(ctx, err)
}

// writeDeadline bounds every write of a streaming response to d (a
// WebSocket's to d plus wsWriteGrace): a client that stops reading makes
// the write fail, which ends the request and its subscriptions instead of
// pinning them forever.
func writeDeadline(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !streaming(r) {
			h.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(&deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), d: d}, r)
	})
}

type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.d))
	return w.ResponseWriter.Write(p)
}

func (w *deadlineWriter) Flush() {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.d))
	_ = w.rc.Flush()
}

// Hijack hands WebSockets a connection whose writes carry the deadline.
func (w *deadlineWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := w.rc.Hijack()
	if err != nil {
		return nil, nil, err
	}
	dc := &deadlineConn{Conn: conn, d: w.d + wsWriteGrace}
	// Servers write through brw (coder/websocket does): point it at dc.
	if err := brw.Writer.Flush(); err != nil {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("flushing a hijacked connection: %w", err)
	}
	brw.Writer.Reset(dc)
	return dc, brw, nil
}

func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type deadlineConn struct {
	net.Conn
	d time.Duration
}

// Write closes the connection when a write fails: a frame may be half
// sent, so the stream is unusable, and closing ends the reader too.
func (c *deadlineConn) Write(p []byte) (int, error) {
	_ = c.Conn.SetWriteDeadline(time.Now().Add(c.d))
	n, err := c.Conn.Write(p)
	if err != nil {
		_ = c.Conn.Close()
	}
	return n, err
}
