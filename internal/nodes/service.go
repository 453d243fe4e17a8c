// Package nodes owns the rules of a tenant's machines: invites, the join
// exchange that turns an invite into a node, the node-name rule (nodename),
// a node's presence (online with what its agent reports, heartbeats) and
// liveness (silent nodes go offline, their jobs are lost after a grace), and
// what the services placed on a node hold of it. The tunnel only carries
// the agent's requests here.
package nodes

import (
	"context"
	"log/slog"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/notify"
)

// Service manages nodes and invites.
type Service struct {
	Ent *ent.Client
	Now func() time.Time
	// PublicURL is the address agents dial, for the join command.
	PublicURL string

	// DB runs the join exchange in one transaction; the agent-facing
	// methods (Join, Connected, Heartbeat) need it.
	DB *database.DB
	// Bus, when set, wakes the schedulers of a node's queues when its
	// capacity changes (it joined, came back or went away).
	Bus *notify.Bus
	// Log is where presence problems that fail nothing are told; nil
	// discards them.
	Log *slog.Logger
	// CapacityChanged, when set, asks for the node's queues to be
	// scheduled again (the node connected or came back online).
	CapacityChanged func(ctx context.Context, nodeID string) error
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}
