package nodes

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/internal/viewer"
)

// StreamsConnected records that replica (its internal URL) holds node id's
// stream tunnel, so other replicas forward relay streams there.
func (s *Service) StreamsConnected(ctx context.Context, id, replica string) error {
	if err := s.DB.Ent.Node.UpdateOneID(id).SetStreamReplica(replica).Exec(viewer.SystemContext(ctx)); err != nil {
		return fmt.Errorf("recording the stream replica of node %s: %w", id, err)
	}
	return nil
}

// StreamsGone clears node id's stream replica if it is still replica (a
// reconnect to another replica may have replaced it already).
func (s *Service) StreamsGone(ctx context.Context, id, replica string) error {
	err := s.DB.Ent.Node.Update().Where(node.ID(id), node.StreamReplica(replica)).
		SetStreamReplica("").Exec(viewer.SystemContext(ctx))
	if err != nil {
		return fmt.Errorf("clearing the stream replica of node %s: %w", id, err)
	}
	return nil
}

// StreamReplica is the internal URL of the replica holding node id's
// stream tunnel, or "" when none does.
func (s *Service) StreamReplica(ctx context.Context, id string) (string, error) {
	n, err := s.DB.Ent.Node.Query().Where(node.ID(id)).Select(node.FieldStreamReplica).Only(viewer.SystemContext(ctx))
	if err != nil {
		return "", fmt.Errorf("finding the stream replica of node %s: %w", id, err)
	}
	return n.StreamReplica, nil
}
