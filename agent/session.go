package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/levers9/levers9/internal/wire"
)

// welcomeTimeout bounds the wait for the server's answer to hello.
const welcomeTimeout = 15 * time.Second

// maxBatch is the most log lines taken from the outbox at once; they go
// out in messages of at most wire.MaxMessageBytes (about 10,000 short
// lines), each stored in one transaction.
const maxBatch = 10_000

// conn is one tunnel connection.
type conn struct {
	ws      *websocket.Conn
	writeMu sync.Mutex
	seq     uint64 // the last sequence number taken; under writeMu

	beatsMu sync.Mutex
	beats   []beat // heartbeats sent and not yet acknowledged, in order
}

// beat is a heartbeat sent with a sequence number.
type beat struct {
	seq  uint64
	sent time.Time
}

func (c *conn) send(ctx context.Context, m wire.Msg) error { return c.sendSeq(ctx, 0, m) }

func (c *conn) sendSeq(ctx context.Context, seq uint64, m wire.Msg) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.writeLocked(ctx, seq, m)
}

// sendNext sends m with the next sequence number, which it returns: the
// server acknowledges it once applied, and an acknowledgement covers
// every message before it, so numbers go out in order, whoever sends.
func (c *conn) sendNext(ctx context.Context, m wire.Msg) (uint64, error) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.seq++
	return c.seq, c.writeLocked(ctx, c.seq, m)
}

// sentBeat records a heartbeat sent as seq at sent.
func (c *conn) sentBeat(seq uint64, sent time.Time) {
	c.beatsMu.Lock()
	c.beats = append(c.beats, beat{seq, sent})
	c.beatsMu.Unlock()
}

// ackedBeat is the sending time of the last heartbeat an ack of seq
// covers: the server applied (recorded) it.
func (c *conn) ackedBeat(seq uint64) (time.Time, bool) {
	c.beatsMu.Lock()
	defer c.beatsMu.Unlock()
	var at time.Time
	n := 0
	for n < len(c.beats) && c.beats[n].seq <= seq {
		at = c.beats[n].sent
		n++
	}
	c.beats = c.beats[n:]
	return at, n > 0
}

func (c *conn) writeLocked(ctx context.Context, seq uint64, m wire.Msg) error {
	b, err := wire.EncodeSeq(seq, m)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", m.Kind(), err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.ws.Write(wctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("sending %s: %w", m.Kind(), err)
	}
	return nil
}

func (c *conn) read(ctx context.Context) (wire.Msg, error) {
	typ, b, err := c.ws.Read(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading from server: %w", err)
	}
	if typ != websocket.MessageText {
		return nil, errors.New("server sent a binary message")
	}
	m, err := wire.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("server message: %w", err)
	}
	if !m.Kind().FromServer() {
		return nil, fmt.Errorf("the server may not send %s", m.Kind())
	}
	return m, nil
}

// wsURL turns the server's http(s) URL into the tunnel's ws(s) URL.
func wsURL(server string) string {
	u := strings.TrimRight(server, "/") + "/agent"
	switch {
	case strings.HasPrefix(u, "https://"):
		return "wss://" + strings.TrimPrefix(u, "https://")
	case strings.HasPrefix(u, "http://"):
		return "ws://" + strings.TrimPrefix(u, "http://")
	}
	return u
}

// session runs one connection until it breaks or ctx ends.
func (a *Agent) session(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, wsURL(a.st.Server), &websocket.DialOptions{
		HTTPClient: a.cfg.Client,
		HTTPHeader: http.Header{"Authorization": {"Bearer " + a.st.Credential}},
	})
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusUnauthorized {
			return ErrCredentialRefused
		}
		return fmt.Errorf("connecting to %s: %w", a.st.Server, err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(wire.MaxMessageBytes)
	c := &conn{ws: ws}

	hello := wire.Hello{NodeID: a.st.NodeID, AgentVersion: a.cfg.Version, Inventory: a.cfg.Inventory, Running: a.tasks.running()}
	helloAt := time.Now()
	if err := c.send(ctx, hello); err != nil {
		return err
	}
	wctx, wcancel := context.WithTimeout(ctx, welcomeTimeout)
	first, err := c.read(wctx)
	wcancel()
	if err != nil {
		return err
	}
	welcome, ok := first.(wire.Welcome)
	if !ok {
		return fmt.Errorf("expected welcome, got %s", first.Kind())
	}
	// The server recorded the node's presence before it welcomed it.
	a.fence.welcome(welcome.FenceAfter(), helloAt)
	a.log.Info("connected to server", "server", a.st.Server, "heartbeat", welcome.HeartbeatInterval(), "fenceAfter", welcome.FenceAfter())
	if a.cfg.OnConnect != nil {
		a.cfg.OnConnect()
	}

	go a.streamTunnel(ctx)
	nf := newNodeFiles(c, a)
	defer nf.close()
	errc := make(chan error, 3)
	go func() { errc <- a.heartbeats(ctx, c, welcome.HeartbeatInterval()) }()
	go func() { errc <- a.deliver(ctx, c) }()
	go func() { errc <- a.receive(ctx, c, nf) }()
	err = <-errc
	cancel()
	_ = ws.Close(websocket.StatusNormalClosure, "")
	return err
}

func (a *Agent) heartbeats(ctx context.Context, c *conn, every time.Duration) error {
	if every <= 0 {
		every = 5 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			// Numbered, so that the server's ack says it recorded it
			// (a pong says only that it read it): the fence counts
			// from there.
			sent := time.Now()
			seq, err := c.sendNext(ctx, wire.Heartbeat{Time: sent})
			if err != nil {
				return err
			}
			c.sentBeat(seq, sent)
			// A half-open connection accepts writes for minutes; a ping
			// that gets no pong finds out.
			pctx, cancel := context.WithTimeout(ctx, max(3*every, 15*time.Second))
			err = c.ws.Ping(pctx)
			cancel()
			if err != nil {
				return fmt.Errorf("server does not answer pings: %w", err)
			}
		}
	}
}

// deliver sends queued reports in order, each message with a sequence
// number; a report leaves the outbox only when the server acknowledges it.
func (a *Agent) deliver(ctx context.Context, c *conn) error {
	a.out.rewind()
	for {
		items := a.out.next(maxBatch)
		if len(items) == 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-a.out.ready:
			}
			continue
		}
		var msgs []wire.Msg
		if items[0].state != nil {
			msgs = append(msgs, *items[0].state)
		} else {
			lines := make([]wire.LogLine, len(items))
			for i, it := range items {
				lines[i] = *it.line
			}
			for _, m := range wire.SplitLogs(items[0].jobID, items[0].attempt, lines) {
				msgs = append(msgs, m)
			}
		}
		for i, m := range msgs {
			seq, err := c.sendNext(ctx, m)
			if errors.Is(err, wire.ErrInvalid) || errors.Is(err, wire.ErrTooLarge) {
				// Resending would fail the same way: drop it, loudly.
				a.log.Error("dropping a report the protocol refuses", "job", items[0].jobID, "err", err)
				err = nil
			}
			if err != nil {
				return err
			}
			// The items are accounted to the last message that carries them.
			n := 0
			if i == len(msgs)-1 {
				n = len(items)
			}
			a.out.sentAs(seq, n)
		}
	}
}

// receive handles the server's messages.
func (a *Agent) receive(ctx context.Context, c *conn, nf *nodeFiles) error {
	for {
		m, err := c.read(ctx)
		if err != nil {
			return err
		}
		switch m := m.(type) {
		case wire.Start:
			a.start(ctx, m)
		case wire.Stop:
			a.stop(m.JobID, m.Reason, time.Duration(m.GraceSeconds)*time.Second)
		case wire.Reconcile:
			a.reconcile(m)
		case wire.Ack:
			if m.Error != "" {
				a.log.Warn("server refused a report", "seq", m.Seq, "err", m.Error)
			}
			a.out.acked(m.Seq)
			if sent, ok := c.ackedBeat(m.Seq); ok {
				a.fence.heard(sent)
			}
		case wire.FileOp:
			nf.op(ctx, m)
		case wire.FileData:
			nf.data(m)
		case wire.Welcome:
		}
	}
}
