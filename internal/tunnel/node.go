package tunnel

import (
	"context"
	"errors"
	"time"

	"github.com/coder/websocket"

	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/wire"
)

// heartbeatWrites limits heartbeat writes per node: a chatty agent must not
// turn into database load.
const heartbeatWrites = time.Second

// hello tells the node rules the agent connected with what it reports; an
// inventory they refuse closes the connection.
func (s *session) hello(ctx context.Context, h wire.Hello) error {
	now := s.srv.now()
	err := s.srv.Nodes.Connected(ctx, s.nodeID, h.Inventory, h.AgentVersion, now)
	var no *nodes.Refusal
	if errors.As(err, &no) {
		return &errClosed{websocket.StatusPolicyViolation, "hello: " + no.Message}
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.lastBeat = now
	s.mu.Unlock()
	return nil
}

// heartbeat passes the agent's heartbeat on, at most once a second.
func (s *session) heartbeat(ctx context.Context) error {
	now := s.srv.now()
	s.mu.Lock()
	if now.Sub(s.lastBeat) < heartbeatWrites {
		s.mu.Unlock()
		return nil
	}
	s.lastBeat = now
	s.mu.Unlock()
	back, err := s.srv.Nodes.Heartbeat(ctx, s.nodeID, now)
	if back {
		s.log.Info("node back online")
	}
	return err
}
