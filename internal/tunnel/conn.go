package tunnel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/sync/semaphore"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/metrics"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// helloTimeout bounds the wait for the agent's first message.
const helloTimeout = 15 * time.Second

// resyncEvery re-reads the node's work even without a signal, in case one
// was lost: the database is the truth, signals only hurry things up.
const resyncEvery = 30 * time.Second

// connect authenticates a node and runs its tunnel until it closes.
func (s *Server) connect(w http.ResponseWriter, r *http.Request) {
	n, ok := s.authenticateNode(w, r)
	if !ok {
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		s.Log.Info("agent websocket upgrade failed", "node", n.ID, "err", err)
		return
	}
	c.SetReadLimit(wire.MaxMessageBytes)
	metrics.AgentConnected(n.LastHeartbeatAt != nil) // set when a tunnel first connects
	sess := &session{
		srv:      s,
		conn:     c,
		nodeID:   n.ID,
		credHash: n.CredentialHash,
		log:      s.Log.With("node", n.ID, "nodeName", n.Name),
		active:   map[string]bool{},
		welcomed: make(chan struct{}),
	}
	err = sess.run(r.Context())
	sess.log.Info("agent disconnected", "reason", err)
}

// authenticateNode finds the node whose credential r carries, or refuses
// the request.
func (s *Server) authenticateNode(w http.ResponseWriter, r *http.Request) (*ent.Node, bool) {
	cred, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || cred == "" {
		refuse(w, http.StatusUnauthorized, "UNAUTHENTICATED", "send the node credential as Authorization: Bearer …")
		return nil, false
	}
	sys := viewer.SystemContext(r.Context())
	n, err := s.DB.Ent.Node.Query().Where(node.CredentialHash(auth.HashSecret(cred))).Only(sys)
	if ent.IsNotFound(err) {
		s.Log.Info("agent refused: unknown node credential", "remote", r.RemoteAddr)
		refuse(w, http.StatusUnauthorized, "UNAUTHENTICATED", "unknown or revoked node credential; join again with a new invite")
		return nil, false
	}
	if err != nil {
		s.Log.Error("agent authentication failed", "err", err)
		refuse(w, http.StatusInternalServerError, "INTERNAL", "try again")
		return nil, false
	}
	return n, true
}

// session is one connected agent.
type session struct {
	srv    *Server
	conn   *websocket.Conn
	nodeID string
	// credHash is the credential the agent authenticated with: once the
	// node's differs (revoked, node removed), the session ends.
	credHash string
	log      *slog.Logger

	writeMu sync.Mutex

	mu sync.Mutex
	// active are the jobs this agent runs or was told to start, so that a
	// job ending on the server side is stopped once.
	active   map[string]bool
	lastBeat time.Time

	// files are the node-storage operations in flight (files.go).
	// welcomed closes once the agent has its welcome: file operations,
	// which may find the session as soon as it connects, wait for it (an
	// agent takes anything else first as a broken handshake).
	welcomed chan struct{}

	filesMu   sync.Mutex
	files     map[uint64]*fileCall
	filesGone bool
}

// errClosed ends a session after a protocol violation.
type errClosed struct {
	code websocket.StatusCode
	why  string
}

func (e *errClosed) Error() string { return e.why }

func (s *session) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The signal subscription comes first so nothing placed meanwhile is
	// missed.
	wake, unsubscribe := s.srv.Bus.Subscribe(notify.TopicNode, s.nodeID)
	defer unsubscribe()
	access, unsubscribeAccess := s.srv.Bus.Subscribe(notify.TopicNodeAccess, s.nodeID)
	defer unsubscribeAccess()

	s.srv.register(s)
	defer s.srv.unregister(s)
	metrics.AgentConnections.Inc()
	defer metrics.AgentConnections.Dec()
	err := s.serve(ctx, wake, access)
	var ec *errClosed
	if errors.As(err, &ec) {
		s.log.Warn("closing agent connection", "reason", ec.why)
		_ = s.conn.Close(ec.code, clip(ec.why, 120))
	} else {
		_ = s.conn.CloseNow()
	}
	return err
}

func (s *session) serve(ctx context.Context, wake, access <-chan struct{}) error {
	helloCtx, cancel := context.WithTimeout(ctx, helloTimeout)
	first, err := s.read(helloCtx)
	cancel()
	if err != nil {
		return err
	}
	hello, ok := first.(wire.Hello)
	if !ok {
		return &errClosed{websocket.StatusPolicyViolation, fmt.Sprintf("the first message must be hello, not %s", first.Kind())}
	}
	if hello.NodeID != s.nodeID {
		return &errClosed{websocket.StatusPolicyViolation, "hello names another node than the credential"}
	}
	if err := s.hello(ctx, hello); err != nil {
		return err
	}
	welcome := wire.Welcome{HeartbeatIntervalMs: s.srv.heartbeatInterval().Milliseconds(), FenceAfterMs: s.srv.FenceAfter.Milliseconds()}
	if err := s.send(ctx, welcome); err != nil {
		return err
	}
	close(s.welcomed)
	if err := s.reconcile(ctx, hello.Running); err != nil {
		return err
	}
	s.log.Info("agent connected", "agentVersion", hello.AgentVersion, "running", len(hello.Running))

	errc := make(chan error, 2)
	go func() { errc <- s.dispatchLoop(ctx, wake, access) }()
	go func() { errc <- s.readLoop(ctx) }()
	return <-errc
}

// read reads one message from the agent. Anything it may not send closes
// the connection.
func (s *session) read(ctx context.Context) (wire.Msg, error) {
	_, m, _, err := s.readSeq(ctx)
	return m, err
}

// readSeq is read with the sender's sequence number (0: none).
func (s *session) readSeq(ctx context.Context) (uint64, wire.Msg, int64, error) {
	typ, b, err := s.conn.Read(ctx)
	if err != nil {
		if websocket.CloseStatus(err) == websocket.StatusMessageTooBig {
			return 0, nil, 0, &errClosed{websocket.StatusMessageTooBig, "message too large"}
		}
		return 0, nil, 0, fmt.Errorf("reading from agent: %w", err)
	}
	if typ != websocket.MessageText {
		return 0, nil, 0, &errClosed{websocket.StatusUnsupportedData, "messages are JSON text frames"}
	}
	seq, m, err := wire.DecodeSeq(b)
	if err != nil {
		return 0, nil, 0, &errClosed{websocket.StatusInvalidFramePayloadData, err.Error()}
	}
	if !m.Kind().FromAgent() {
		return 0, nil, 0, &errClosed{websocket.StatusPolicyViolation, fmt.Sprintf("an agent may not send %s", m.Kind())}
	}
	return seq, m, int64(len(b)), nil
}

// send writes one message to the agent.
func (s *session) send(ctx context.Context, m wire.Msg) error {
	b, err := wire.Encode(m)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", m.Kind(), err)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.conn.Write(wctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("sending %s: %w", m.Kind(), err)
	}
	return nil
}

// silence is how long an agent may send nothing before its connection is
// taken for dead (a half-open TCP connection never reports an error).
func (s *session) silence() time.Duration {
	return max(4*s.srv.heartbeatInterval(), 20*time.Second)
}

// inbound is one message read from the agent, with its sequence number
// and its size on the wire.
type inbound struct {
	seq  uint64
	m    wire.Msg
	size int64
}

// Read-ahead bounds: messages, and bytes (each message is at most
// wire.MaxMessageBytes; a node may not make the server hold 32 of those
// for it).
const (
	readAhead      = 32
	readAheadBytes = 4 * wire.MaxMessageBytes
)

// inbox is the messages read ahead and not yet taken by the read loop;
// their bytes are held in room until they are taken.
type inbox struct {
	ch   chan inbound
	room *semaphore.Weighted
}

// take returns the next message, waiting for it; false when the reader
// has stopped.
func (q *inbox) take() (inbound, bool) {
	m, ok := <-q.ch
	if ok {
		q.room.Release(m.size)
	}
	return m, ok
}

// takeQueued appends to batch the messages already queued that are of
// the same kind (same reports true), without waiting, until batch holds
// most; it returns batch and the first message of another kind it took
// (nil: none).
func (q *inbox) takeQueued(batch []inbound, most int, same func(wire.Msg) bool) ([]inbound, *inbound) {
	for len(batch) < most {
		select {
		case m, ok := <-q.ch:
			if !ok {
				return batch, nil // the reader failed: the loop finds out next
			}
			q.room.Release(m.size)
			if !same(m.m) {
				return batch, &m
			}
			batch = append(batch, m)
		default:
			return batch, nil
		}
	}
	return batch, nil
}

// readLoop applies the agent's messages in the order sent. A reader
// goroutine reads ahead while the loop applies, so state reports (and log
// messages) that queue up meanwhile are applied together, in one
// transaction (applyReports, applyLogs).
func (s *session) readLoop(ctx context.Context) error {
	// The reader stops with ctx (the session's): cancelling a read closes
	// the connection, which must wait for run to close it with its reason.
	in := &inbox{ch: make(chan inbound, readAhead), room: semaphore.NewWeighted(readAheadBytes)}
	errc := make(chan error, 1)
	go func() {
		defer close(in.ch)
		for {
			rctx, cancelRead := context.WithTimeout(ctx, s.silence())
			seq, m, size, err := s.readSeq(rctx)
			cancelRead()
			if err != nil {
				errc <- err
				return
			}
			size = min(size, readAheadBytes)
			if in.room.Acquire(ctx, size) != nil {
				return
			}
			select {
			case in.ch <- inbound{seq, m, size}:
			case <-ctx.Done():
				return
			}
		}
	}()
	var next *inbound
	for {
		msg := next
		next = nil
		if msg == nil {
			m, ok := in.take()
			if !ok {
				return <-errc
			}
			msg = &m
		}
		if isLogs(msg.m) {
			var err error
			if next, err = s.applyLogs(ctx, *msg, in); err != nil {
				return err
			}
			continue
		}
		if isReport(msg.m) {
			var batch []inbound
			batch, next = in.takeQueued([]inbound{*msg}, maxReportBatch, isReport)
			if err := s.applyReports(ctx, batch); err != nil {
				// A database hiccup must not lose reports: drop the
				// connection and let the agent resend after reconnecting.
				return err
			}
			continue
		}
		if err := s.apply(ctx, *msg); err != nil {
			return err
		}
	}
}

// maxReportBatch bounds the reports applied in one transaction.
const maxReportBatch = 256

func isReport(m wire.Msg) bool { _, ok := m.(wire.StateChange); return ok }

func isLogs(m wire.Msg) bool { _, ok := m.(wire.Logs); return ok }

// apply handles one message other than a state report or log lines (see
// applyReports, applyLogs), then acknowledges it.
func (s *session) apply(ctx context.Context, in inbound) error {
	var err error
	switch m := in.m.(type) {
	case wire.Heartbeat:
		err = s.heartbeat(ctx)
	case wire.Hello:
		return &errClosed{websocket.StatusPolicyViolation, "hello may be sent only once"}
	case wire.Ack:
		// Nothing is sent with a sequence number yet.
	case wire.FileResult:
		s.deliverFile(m.ID, m)
	case wire.FileData:
		s.deliverFile(m.ID, m)
	}
	if err != nil {
		// A database hiccup must not lose reports: drop the connection
		// and let the agent resend after reconnecting.
		return err
	}
	return s.ack(ctx, in.seq)
}

// ack tells the agent that the message numbered seq is applied: it keeps a
// report until then, so a connection lost mid-way loses nothing.
func (s *session) ack(ctx context.Context, seq uint64) error {
	if seq == 0 {
		return nil
	}
	return s.send(ctx, wire.Ack{Seq: seq})
}

func (s *session) dispatchLoop(ctx context.Context, wake, access <-chan struct{}) error {
	t := time.NewTicker(resyncEvery)
	defer t.Stop()
	for {
		if err := s.dispatch(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
			continue // new work: the credential is checked on its own signal
		case <-access:
		case <-t.C:
		}
		// A revoke signals the node's access; the resync catches a lost
		// signal. One indexed read each, not one per job's wake.
		if err := s.srv.stillAdmitted(ctx, s.nodeID, s.credHash); err != nil {
			return err
		}
	}
}

// errRevoked ends a tunnel whose node credential was revoked or whose node
// was removed: the agent reconnects, is refused, and stops.
var errRevoked = &errClosed{websocket.StatusPolicyViolation, "the node credential was revoked"}

// stillAdmitted returns errRevoked unless node id still has the credential
// hash it authenticated with.
func (s *Server) stillAdmitted(ctx context.Context, id, hash string) error {
	ok, err := s.DB.Ent.Node.Query().Where(node.ID(id), node.CredentialHash(hash)).Exist(viewer.SystemContext(ctx))
	if err != nil {
		return fmt.Errorf("checking the credential of node %s: %w", id, err)
	}
	if !ok {
		return errRevoked
	}
	return nil
}

func (s *session) markActive(jobID string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		s.active[jobID] = true
	} else {
		delete(s.active, jobID)
	}
}

func (s *session) activeJobs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.active))
	for id := range s.active {
		ids = append(ids, id)
	}
	return ids
}
