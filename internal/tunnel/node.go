package tunnel

import (
	"context"
	"fmt"
	"time"

	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/inventory"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// heartbeatWrites limits heartbeat writes per node: a chatty agent must not
// turn into database load.
const heartbeatWrites = time.Second

func toInventory(w wire.Inventory) inventory.Inventory {
	inv := inventory.Inventory{CPUs: w.CPUs, MemoryMiB: w.MemoryMiB, Runtime: w.Runtime}
	for _, g := range w.GPUs {
		inv.GPUs = append(inv.GPUs, inventory.GPU{Type: g.Type, Count: g.Count, Devices: g.Devices})
	}
	return inv
}

// hello marks the node online with what it reports.
func (s *session) hello(ctx context.Context, h wire.Hello) error {
	sys := viewer.SystemContext(ctx)
	inv := toInventory(h.Inventory)
	if err := checkInventory(inv); err != nil {
		return &errClosed{1008, "hello: " + err.Error()}
	}
	now := s.srv.now()
	err := s.srv.DB.Ent.Node.UpdateOneID(s.nodeID).
		SetStatus(node.StatusOnline).SetInventory(inv).SetAgentVersion(clip(h.AgentVersion, 128)).
		SetLastHeartbeatAt(now).Exec(sys)
	if err != nil {
		return fmt.Errorf("marking node online: %w", err)
	}
	s.mu.Lock()
	s.lastBeat = now
	s.mu.Unlock()
	s.capacityChanged(ctx)
	return nil
}

// heartbeat records that the node is alive, at most once a second; a node
// that liveness had marked offline comes back online.
func (s *session) heartbeat(ctx context.Context) error {
	now := s.srv.now()
	s.mu.Lock()
	if now.Sub(s.lastBeat) < heartbeatWrites {
		s.mu.Unlock()
		return nil
	}
	s.lastBeat = now
	s.mu.Unlock()
	sys := viewer.SystemContext(ctx)
	back, err := s.srv.DB.Ent.Node.Update().
		Where(node.ID(s.nodeID), node.StatusEQ(node.StatusOffline)).
		SetStatus(node.StatusOnline).SetLastHeartbeatAt(now).Save(sys)
	if err != nil {
		return fmt.Errorf("recording heartbeat: %w", err)
	}
	if back > 0 {
		s.log.Info("node back online")
		s.capacityChanged(ctx)
		return nil
	}
	if err := s.srv.DB.Ent.Node.UpdateOneID(s.nodeID).SetLastHeartbeatAt(now).Exec(sys); err != nil {
		return fmt.Errorf("recording heartbeat: %w", err)
	}
	return nil
}

// capacityChanged wakes the schedulers of the node's queues.
func (s *session) capacityChanged(ctx context.Context) {
	publishQueues(ctx, s.srv, s.nodeID)
	if s.srv.CapacityChanged != nil {
		if err := s.srv.CapacityChanged(ctx, s.nodeID); err != nil {
			s.log.Warn("asking for the node's queues to be scheduled", "err", err)
		}
	}
}

func publishQueues(ctx context.Context, s *Server, nodeID string) {
	if s.Bus == nil {
		return
	}
	sys := viewer.SystemContext(ctx)
	ids, err := s.DB.Ent.Queue.Query().Where(queue.HasNodesWith(node.ID(nodeID))).IDs(sys)
	if err != nil {
		s.Log.Warn("finding the node's queues", "node", nodeID, "err", err)
		return
	}
	for _, id := range ids {
		if err := s.Bus.Publish(ctx, notify.TopicQueue, id); err != nil {
			s.Log.Warn("signalling queue", "queue", id, "err", err)
		}
	}
}
