package tunnel

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/wire"
)

// streamOpenTimeout bounds the agent's answer to a StreamOpen.
const streamOpenTimeout = 15 * time.Second

// commitOpenTimeout bounds the answer to a StreamCommit, which the agent
// gives only once the container is committed, saved and uploaded.
const commitOpenTimeout = 10 * time.Minute

// ErrNotHere is OpenStream's error when this replica does not hold the
// node's stream tunnel; the node's stream replica (nodes.Service) does.
var ErrNotHere = errors.New("this server replica does not hold the node's stream tunnel")

// connectStreams authenticates a node and serves its stream tunnel: a
// yamux session on the upgraded connection (wire.StreamUpgrade), on which this replica opens
// streams to the node's services and the agent opens streams for its
// function containers' connections.
func (s *Server) connectStreams(w http.ResponseWriter, r *http.Request) {
	n, ok := s.authenticateNode(w, r)
	if !ok {
		return
	}
	c, err := wire.AcceptStreams(w, r)
	if err != nil {
		s.Log.Info("agent stream tunnel upgrade failed", "node", n.ID, "err", err)
		return
	}
	ctx := r.Context()
	log := s.Log.With("node", n.ID, "nodeName", n.Name)
	ys, err := yamux.Server(c, wire.YamuxConfig(log))
	if err != nil {
		log.Error("starting the stream tunnel", "err", err)
		_ = c.Close()
		return
	}
	defer ys.Close()
	s.reg.setStreams(n.ID, ys)
	defer s.reg.dropStreams(n.ID, ys)
	if s.Nodes != nil && s.Replica != "" {
		if err := s.Nodes.StreamsConnected(ctx, n.ID, s.Replica); err != nil {
			log.Warn("recording the node's stream replica", "err", err)
		}
		defer func() {
			if err := s.Nodes.StreamsGone(context.WithoutCancel(ctx), n.ID, s.Replica); err != nil {
				log.Warn("clearing the node's stream replica", "err", err)
			}
		}()
	}
	log.Info("agent stream tunnel connected")
	// The agent opens a stream for each connection of a function's
	// container (Runners).
	go s.acceptAgentStreams(ctx, n.ID, ys, log)
	// A revoked credential ends this tunnel too: a revoke signals the
	// node's access; the resync catches a lost signal.
	access, unsubscribe := s.Bus.Subscribe(notify.TopicNodeAccess, n.ID)
	defer unsubscribe()
	t := time.NewTicker(resyncEvery)
	defer t.Stop()
watch:
	for {
		select {
		case <-ys.CloseChan():
			break watch
		case <-ctx.Done():
			break watch
		case <-access:
		case <-t.C:
		}
		if err := s.stillAdmitted(ctx, n.ID, n.CredentialHash); err != nil {
			log.Warn("closing the agent stream tunnel", "reason", err)
			break watch
		}
	}
	log.Info("agent stream tunnel disconnected")
}

// OpenStream opens a stream to node nodeID's agent and returns it once the
// agent accepted open: raw bytes for wire.StreamTCP, terminal frames for
// the others. ErrNotHere when another replica holds the node; a *fault.Error
// for the agent's refusals.
func (s *Server) OpenStream(ctx context.Context, nodeID string, open wire.StreamOpen) (net.Conn, error) {
	if err := open.Validate(); err != nil {
		return nil, fault.New(fault.BadUserInput, "%s", err.Error())
	}
	ys := s.reg.streamsOf(nodeID)
	if ys == nil {
		return nil, ErrNotHere
	}
	st, err := ys.OpenStream()
	if err != nil {
		return nil, fault.New(fault.Unavailable, "the node's tunnel is closing: %v", err)
	}
	wait := streamOpenTimeout
	if open.Kind == wire.StreamCommit {
		wait = commitOpenTimeout
	}
	deadline := time.Now().Add(wait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = st.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = st.Close() })
	defer stop()
	var reply wire.StreamReply
	if err := wire.WriteHeader(st, open); err != nil {
		_ = st.Close()
		return nil, fault.New(fault.Unavailable, "opening a stream to the node: %v", err)
	}
	if err := wire.ReadHeader(st, &reply); err != nil {
		_ = st.Close()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fault.New(fault.Unavailable, "the node closed the stream")
		}
		return nil, fault.New(fault.Unavailable, "the node did not answer: %v", err)
	}
	if reply.Error != "" {
		_ = st.Close()
		return nil, fault.New(replyCode(reply.Code), "%s", reply.Error)
	}
	_ = st.SetDeadline(time.Time{})
	return st, nil
}

func replyCode(c string) fault.Code {
	switch c {
	case "NOT_FOUND":
		return fault.NotFound
	case "BAD_USER_INPUT":
		return fault.BadUserInput
	}
	return fault.Unavailable
}

// HoldsStreams reports whether this replica holds node nodeID's stream
// tunnel.
func (s *Server) HoldsStreams(nodeID string) bool { return s.reg.streamsOf(nodeID) != nil }

func (r *registry) setStreams(nodeID string, ys *yamux.Session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.streams == nil {
		r.streams = map[string]*yamux.Session{}
	}
	if old := r.streams[nodeID]; old != nil {
		_ = old.Close() // the agent reconnected: the old one is dead
	}
	r.streams[nodeID] = ys
}

func (r *registry) dropStreams(nodeID string, ys *yamux.Session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.streams[nodeID] == ys {
		delete(r.streams, nodeID)
	}
}

func (r *registry) streamsOf(nodeID string) *yamux.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	ys := r.streams[nodeID]
	if ys == nil || ys.IsClosed() {
		return nil
	}
	return ys
}
