package relay

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/net/http/httpguts"

	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/wire"
)

// drainGrace is how long a stream's output may drain after its client
// closed.
const drainGrace = 5 * time.Second

// streamReadLimit bounds one WebSocket message from a client: a frame or
// a chunk of a TCP stream.
const streamReadLimit = 1 << 20

// tcp serves GET /streams/tcp/JOB/SERVICE/PORT: a WebSocket whose binary
// messages are the bytes of one TCP connection to the port
// (levers9 port-forward).
func (h *Handler) tcp(w http.ResponseWriter, r *http.Request) {
	t, err := h.Relay.Resolve(r.Context(), r.PathValue("job"), r.PathValue("service"), r.PathValue("port"))
	if err != nil {
		fail(w, err, h.Relay)
		return
	}
	h.bridge(w, r, t, wire.StreamOpen{Kind: wire.StreamTCP})
}

// exec serves GET /streams/exec/JOB/SERVICE?cmd=…&cmd=…&tty=1&rows=&cols=:
// a WebSocket carrying terminal frames (wire.WriteFrame) both ways.
func (h *Handler) exec(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	open := wire.StreamOpen{Kind: wire.StreamExec, Command: q["cmd"], TTY: q.Get("tty") == "1" || q.Get("tty") == "true"}
	if err := size(&open, q.Get("rows"), q.Get("cols")); err != nil {
		fail(w, err, h.Relay)
		return
	}
	h.terminal(w, r, open)
}

// attach serves GET /streams/attach/JOB/SERVICE?rows=&cols=.
func (h *Handler) attach(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	open := wire.StreamOpen{Kind: wire.StreamAttach}
	if err := size(&open, q.Get("rows"), q.Get("cols")); err != nil {
		fail(w, err, h.Relay)
		return
	}
	h.terminal(w, r, open)
}

func size(open *wire.StreamOpen, rows, cols string) error {
	for _, p := range []struct {
		s   string
		dst *uint16
	}{{rows, &open.Rows}, {cols, &open.Cols}} {
		if p.s == "" {
			continue
		}
		n, err := strconv.ParseUint(p.s, 10, 16)
		if err != nil {
			return fault.Invalid("rows/cols", "must be whole numbers up to 65535, not %.20q", p.s)
		}
		*p.dst = uint16(n)
	}
	return nil
}

func (h *Handler) terminal(w http.ResponseWriter, r *http.Request, open wire.StreamOpen) {
	t, err := h.Relay.ResolveTerminal(r.Context(), r.PathValue("job"), r.PathValue("service"))
	if err != nil {
		fail(w, err, h.Relay)
		return
	}
	if open.Kind == wire.StreamAttach && !startedWithTTY(t) {
		// Known here: refused without a stream to the node.
		fail(w, fault.New(fault.BadUserInput, "service %s of job %s was not started with a terminal (tty: true): use exec", t.Service.Name, t.Job.ID), h.Relay)
		return
	}
	check := open
	check.JobID, check.Service = t.Job.ID, t.Service.Name
	if err := check.Validate(); err != nil {
		fail(w, fault.New(fault.BadUserInput, "%s", err.Error()), h.Relay)
		return
	}
	h.bridge(w, r, t, open)
}

// bridge opens the stream first (so refusals are plain HTTP answers),
// then upgrades and copies both ways until either end closes.
func (h *Handler) bridge(w http.ResponseWriter, r *http.Request, t Target, open wire.StreamOpen) {
	if h.forward(w, r, t) {
		return
	}
	ctx := r.Context()
	st, err := h.Relay.Open(ctx, t, open)
	if err != nil {
		fail(w, err, h.Relay)
		return
	}
	defer st.Close()
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept answered already
	}
	defer c.CloseNow()
	c.SetReadLimit(streamReadLimit)
	// The stream outlives the request's one authentication: it ends when
	// the token or session it was opened with is revoked or expires.
	ctx, cancel := h.hold(ctx)
	defer cancel()
	// An open terminal or port-forward keeps the job in use even while
	// no bytes flow (an idle shell, a database connection at rest).
	go h.Relay.keepActive(ctx, t.Job.ID)
	if open.Kind != wire.StreamTCP {
		if err := h.Relay.Jobs.TerminalOpened(ctx, t.Job, t.Service.Name, open.Kind, open.Command); err != nil && h.Relay.Log != nil {
			h.Relay.Log.Error("auditing a terminal", "job", t.Job.ID, "err", err)
		}
	}
	nc := websocket.NetConn(ctx, c, websocket.MessageBinary)
	var out io.Writer = nc
	ended := func() {}
	if open.Kind == wire.StreamExec {
		// The job's exec history: who ran what, and how it ended (the
		// exit passing through, not the output).
		sniff := &frameSniffer{}
		out = sniffingWriter{w: nc, f: sniff}
		end := h.recordExec(ctx, t, open)
		ended = func() { end(sniff) }
	}
	touch := func() { h.Relay.Active.Touch(t.Job.ID) }
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := copyBuffers.Get()
		defer copyBuffers.Put(buf)
		_, _ = io.CopyBuffer(&activeConn{Conn: st, touch: touch}, nc, buf)
		closeWrite(st)
		// The client is gone (a WebSocket has no half-close): what the
		// service still sends has a moment to drain, then the stream
		// ends; at once when the stream was ended (a revoked token).
		grace := drainGrace
		if ctx.Err() != nil {
			grace = 0
		}
		_ = st.SetReadDeadline(time.Now().Add(grace))
	}()
	buf := copyBuffers.Get()
	_, _ = io.CopyBuffer(out, st, buf)
	copyBuffers.Put(buf)
	ended() // what the process said is all here: not after the close handshake
	_ = c.Close(websocket.StatusNormalClosure, "")
	cancel()
	<-done
}

// recordExec records the start of exec open in t and returns what
// records its end from what the sniffer saw.
func (h *Handler) recordExec(ctx context.Context, t Target, open wire.StreamOpen) func(*frameSniffer) {
	id, err := h.Relay.Jobs.ExecStarted(ctx, t.Job, t.Service.Name, open.Command, open.TTY)
	if err != nil {
		h.logError("recording an exec", t, err)
		return func(*frameSniffer) {}
	}
	return func(f *frameSniffer) {
		text := f.errText
		if f.exit == nil && text == "" {
			text = "the stream closed before the command exited"
		}
		if err := h.Relay.Jobs.ExecEnded(ctx, id, f.exit, text); err != nil {
			h.logError("recording the end of an exec", t, err)
		}
	}
}

func (h *Handler) logError(what string, t Target, err error) {
	if h.Relay.Log != nil {
		h.Relay.Log.Error(what, "job", t.Job.ID, "service", t.Service.Name, "err", err)
	}
}

// hold is ctx held by the viewer's token (auth.Service.Hold): it ends
// when the token does.
func (h *Handler) hold(ctx context.Context) (context.Context, context.CancelFunc) {
	if h.Auth == nil {
		return context.WithCancel(ctx)
	}
	return h.Auth.Hold(ctx)
}

// ownPages refuses, before anything is opened, a stream request that is
// not a WebSocket handshake or comes from a page of another origin. The
// handshake checks both, but only after the stream was opened (an exec'd
// command started): a page of another origin of the same site (a job on
// the relay domain) has the dashboard's Lax session cookie sent along, by
// a WebSocket (with its Origin) or by a plain GET (an <img>, no Origin).
func (h *Handler) ownPages(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !httpguts.HeaderValuesContainsToken(r.Header.Values("Connection"), "upgrade") || !httpguts.HeaderValuesContainsToken(r.Header.Values("Upgrade"), "websocket") || r.Header.Get("Sec-WebSocket-Key") == "" {
			fail(w, fault.New(fault.BadUserInput, "streams are WebSockets: send a WebSocket handshake"), h.Relay)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !sameHost(o, r.Host) {
			fail(w, fault.New(fault.Forbidden, "streams open only from the server's own pages, not from %.100q", o), h.Relay)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sameHost reports whether origin (an Origin header) is of host, as the
// WebSocket handshake decides.
func sameHost(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, host)
}

// startedWithTTY reports whether t's service runs on a terminal (its
// job's spec says tty).
func startedWithTTY(t Target) bool {
	for _, sp := range t.Job.Spec.Services {
		if sp.Name == t.Service.Name {
			return sp.TTY
		}
	}
	return false
}

// closeWrite ends the sending half of c (the agent sees end of input).
func closeWrite(c net.Conn) {
	_ = c.Close() // a yamux stream's Close is a half-close
}
