package nodes

import (
	"context"
	"errors"
	"fmt"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
)

// RevokeCredential makes node id's credential worthless: its hash is
// cleared, so the agent's next connection is refused and it can come back
// only by joining again with a new invite (its own invite is used). The
// node goes offline at once, so nothing more is placed on it, and the
// jobs it ran are lost after liveness's grace, as for a node that went
// silent. The agent's open tunnels are told to re-check (Disconnect).
// Tenant admins only; another tenant's node is not found.
func (s *Service) RevokeCredential(ctx context.Context, id string) (*ent.Node, error) {
	if err := requireAdmin(ctx, "revoke node credentials"); err != nil {
		return nil, err
	}
	// Loaded as the viewer: another tenant's node is not found.
	n, err := s.Ent.Node.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	n, err = s.Ent.Node.UpdateOne(n).ClearCredentialHash().SetStatus(node.StatusOffline).Save(ctx)
	if err != nil {
		return nil, fmt.Errorf("revoking the credential of node %s: %w", id, err)
	}
	s.disconnect(ctx, id)
	return n, nil
}

// Delete removes node id from its tenant: its credential is revoked and
// its agent disconnected as by RevokeCredential, and the row is deleted
// (ended services keep their history without the node). It is refused,
// writing nothing, while services are placed on the node (pending or
// running: drain it and let them end) or while a node storage lives on it
// (its buckets' files are there). Tenant admins only; another tenant's
// node is not found. It returns the node's name, for messages.
func (s *Service) Delete(ctx context.Context, id string) (string, error) {
	if err := requireAdmin(ctx, "remove nodes"); err != nil {
		return "", err
	}
	n, err := s.Ent.Node.Get(ctx, id)
	if err != nil {
		return "", err
	}
	tx, err := s.Ent.Tx(ctx)
	if err != nil {
		return "", fmt.Errorf("removing node %s: %w", n.Name, err)
	}
	defer func() { _ = tx.Rollback() }()
	// Writing the row first takes its lock: a scheduler placing on the
	// node (it locks the nodes it places on) finishes before the check
	// below, and none places after it (drained, offline).
	err = tx.Node.UpdateOneID(id).ClearCredentialHash().SetDrain(true).SetStatus(node.StatusOffline).Exec(ctx)
	if err != nil {
		return "", fmt.Errorf("removing node %s: %w", n.Name, err)
	}
	if err := refuseRemoval(ctx, tx.Client(), n); err != nil {
		return "", err
	}
	if err := tx.Node.DeleteOneID(id).Exec(ctx); err != nil {
		return "", fmt.Errorf("removing node %s: %w", n.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return "", fmt.Errorf("removing node %s: %w", n.Name, err)
	}
	s.disconnect(ctx, id)
	return n.Name, nil
}

// Removable loads node id as the viewer (another tenant's is not found)
// and says, writing nothing, why Delete would refuse it now (refusal nil:
// it would not), for a confirmation page to show before the admin asks.
func (s *Service) Removable(ctx context.Context, id string) (n *ent.Node, refusal *fault.Error, err error) {
	if err := requireAdmin(ctx, "remove nodes"); err != nil {
		return nil, nil, err
	}
	if n, err = s.Ent.Node.Get(ctx, id); err != nil {
		return nil, nil, err
	}
	why := refuseRemoval(ctx, s.Ent, n)
	if why != nil && !errors.As(why, &refusal) {
		return nil, nil, why // a database failure, not a reason
	}
	return n, refusal, nil
}

// refuseRemoval says why node n may not be removed yet, or nil.
func refuseRemoval(ctx context.Context, c *ent.Client, n *ent.Node) error {
	// Read as the system: a member's job holds the node all the same,
	// whoever asks (as HeldOn counts it).
	sys := viewer.SystemContext(ctx)
	placed, err := c.Service.Query().
		Where(service.NodeID(n.ID), service.StatusIn(service.StatusPending, service.StatusRunning)).
		Count(sys)
	if err != nil {
		return fmt.Errorf("counting the services on node %s: %w", n.Name, err)
	}
	if placed > 0 {
		return fault.Invalid("id", "node %s still has %d service(s) placed on it; drain it and wait for them to end, then remove it", n.Name, placed)
	}
	held, err := c.Storage.Query().Where(storage.NodeID(n.ID)).Select(storage.FieldName).Strings(ctx)
	if err != nil {
		return fmt.Errorf("finding the storages on node %s: %w", n.Name, err)
	}
	if len(held) > 0 {
		return fault.Invalid("id", "node %s holds the node storage %q (its buckets' files are there); delete that storage first", n.Name, held[0])
	}
	return nil
}

// disconnect wakes whoever holds node id's tunnels, which re-check the
// credential and close when it is gone, and the schedulers of its queues,
// whose capacity just went. Without a bus the tunnels find out at their
// next periodic re-read.
func (s *Service) disconnect(ctx context.Context, id string) {
	if s.Bus == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if err := s.Bus.Publish(ctx, notify.TopicNodeAccess, id); err != nil {
		s.log().Warn("signalling the node's tunnels", "node", id, "err", err)
	}
	// And the node's and its queues' followers: its capacity is gone.
	wakeQueues(ctx, s.Ent, s.Bus, s.log(), id)
}

func requireAdmin(ctx context.Context, what string) error {
	if v := viewer.FromContext(ctx); !v.InTenant() || !v.Admin {
		return fault.New(fault.Forbidden, "only tenant admins %s", what)
	}
	return nil
}
