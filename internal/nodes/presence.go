package nodes

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/inventory"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// Connected marks node id online with what its agent reports on
// connecting (its inventory and version) and starts its heartbeat clock at
// now; the schedulers of its queues are woken, since its capacity may have
// changed. An inventory out of range is a *Refusal and writes nothing.
func (s *Service) Connected(ctx context.Context, id string, reported wire.Inventory, agentVersion string, now time.Time) error {
	inv := fromWire(reported)
	if err := checkInventory(inv); err != nil {
		return err
	}
	err := s.DB.Ent.Node.UpdateOneID(id).
		SetStatus(node.StatusOnline).SetInventory(inv).SetAgentVersion(truncate(agentVersion, maxAgentVersion)).
		SetLastHeartbeatAt(now).Exec(viewer.SystemContext(ctx))
	if err != nil {
		return fmt.Errorf("marking node %s online: %w", id, err)
	}
	s.capacityChanged(ctx, id)
	return nil
}

// Heartbeat records that node id was alive at now. A node liveness had
// marked offline comes back online (back is true) and its queues' schedulers
// are woken. An online node, the usual case, costs one statement.
func (s *Service) Heartbeat(ctx context.Context, id string, now time.Time) (back bool, err error) {
	sys := viewer.SystemContext(ctx)
	n, err := s.DB.Ent.Node.Update().
		Where(node.ID(id), node.StatusEQ(node.StatusOnline)).
		SetLastHeartbeatAt(now).Save(sys)
	if err != nil {
		return false, fmt.Errorf("recording heartbeat of node %s: %w", id, err)
	}
	if n > 0 {
		return false, nil
	}
	// A revoked node stays offline: a heartbeat read before the revoke
	// closed its tunnel must not bring it back.
	n, err = s.DB.Ent.Node.Update().
		Where(node.ID(id), node.StatusEQ(node.StatusOffline), node.CredentialHashNotNil()).
		SetStatus(node.StatusOnline).SetLastHeartbeatAt(now).Save(sys)
	if err != nil {
		return false, fmt.Errorf("recording heartbeat of node %s: %w", id, err)
	}
	if n > 0 {
		s.capacityChanged(ctx, id)
		return true, nil
	}
	// Gone, or online again meanwhile: as before, the node's own row says.
	if err := s.DB.Ent.Node.UpdateOneID(id).SetLastHeartbeatAt(now).Exec(sys); err != nil {
		return false, fmt.Errorf("recording heartbeat of node %s: %w", id, err)
	}
	return false, nil
}

// capacityChanged wakes the schedulers of node id's queues. A failure only
// delays placement (the periodic pass catches up), so it is logged.
func (s *Service) capacityChanged(ctx context.Context, id string) {
	wakeQueues(ctx, s.DB.Ent, s.Bus, s.log(), id)
	if s.CapacityChanged != nil {
		if err := s.CapacityChanged(ctx, id); err != nil {
			s.log().Warn("asking for the node's queues to be scheduled", "node", id, "err", err)
		}
	}
}

// wakeQueues signals the queues node id serves, so their schedulers see its
// capacity come or go, and the node itself (the dashboard's live nodes
// page, a node without queues included).
func wakeQueues(ctx context.Context, c *ent.Client, bus *notify.Bus, log *slog.Logger, id string) {
	if bus == nil {
		return
	}
	if err := bus.Publish(ctx, notify.TopicNode, id); err != nil {
		log.Warn("signalling node", "node", id, "err", err)
	}
	ids, err := c.Queue.Query().Where(queue.HasNodesWith(node.ID(id))).IDs(viewer.SystemContext(ctx))
	if err != nil {
		log.Warn("finding the node's queues", "node", id, "err", err)
		return
	}
	for _, q := range ids {
		if err := bus.Publish(ctx, notify.TopicQueue, q); err != nil {
			log.Warn("signalling queue", "queue", q, "err", err)
		}
	}
}

// fromWire is the inventory an agent reported, as the server stores it.
func fromWire(w wire.Inventory) inventory.Inventory {
	inv := inventory.Inventory{CPUs: w.CPUs, MemoryMiB: w.MemoryMiB, Runtime: w.Runtime}
	for _, g := range w.GPUs {
		inv.GPUs = append(inv.GPUs, inventory.GPU{Type: g.Type, Count: g.Count, Devices: g.Devices})
	}
	return inv
}

// checkInventory refuses (BAD_INVENTORY) an inventory no machine has: the
// scheduler must never do arithmetic on absurd numbers.
func checkInventory(inv inventory.Inventory) error {
	if inv.CPUs < 0 || inv.CPUs > 1<<16 {
		return refuse(BadInventory, "inventory.cpus %v is out of range", inv.CPUs)
	}
	if inv.MemoryMiB < 0 || inv.MemoryMiB > 1<<40 {
		return refuse(BadInventory, "inventory.memoryMiB %d is out of range", inv.MemoryMiB)
	}
	if len(inv.GPUs) > 64 {
		return refuse(BadInventory, "inventory.gpus: at most 64 GPU types")
	}
	for _, g := range inv.GPUs {
		if g.Type == "" || len(g.Type) > 64 || g.Count < 0 || g.Count > 1024 {
			return refuse(BadInventory, "inventory.gpus: %.64q × %d is not a valid GPU entry", g.Type, g.Count)
		}
	}
	return nil
}
