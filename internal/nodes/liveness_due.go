package nodes

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/viewer"
)

// Due says whether a sweep now would change anything: an online node is
// silent past the TTL, or a node offline past the grace still holds
// services of pending or running jobs. It only reads, with the sweep's own
// conditions, so the periodic sweep can be skipped when it is false (an
// idle server then pays two indexed reads instead of a River job).
func (l *Liveness) Due(ctx context.Context) (bool, error) {
	sys := viewer.SystemContext(ctx)
	_, stale, lostAt := l.window(l.Now())
	silent, err := l.DB.Ent.Node.Query().Where(silentSince(stale)).Exist(sys)
	if err != nil {
		return true, fmt.Errorf("looking for silent nodes: %w", err)
	}
	if silent {
		return true, nil
	}
	lost, err := l.DB.Ent.Job.Query().Where(onLostNodes(service.HasNodeWith(lostSince(lostAt)))).Exist(sys)
	if err != nil {
		return true, fmt.Errorf("looking for jobs on lost nodes: %w", err)
	}
	return lost, nil
}
