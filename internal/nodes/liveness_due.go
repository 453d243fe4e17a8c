package nodes

import (
	"context"
	"fmt"
	"time"

	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/viewer"
)

// Check is what one liveness check found: whether a sweep now would change
// anything, and since when the control plane has heard nodes (At is when
// the check ran). A sweep run later for it must pass Heard on.
type Check struct {
	Due       bool
	Heard, At time.Time
}

// Due says whether a sweep now would change anything: an online node is
// silent past the TTL, or a node offline past the grace still holds
// services of pending or running jobs. It only reads, with the sweep's own
// conditions, so the periodic sweep can be skipped when it is false (an
// idle server then pays two indexed reads instead of a River job).
func (l *Liveness) Due(ctx context.Context) (bool, error) {
	c, err := l.Check(ctx)
	return c.Due, err
}

// Check is Due with when the control plane began hearing nodes. Each call
// counts as a check of the hearing: a failed read starts a new stretch.
func (l *Liveness) Check(ctx context.Context) (Check, error) {
	now := l.Now()
	c := Check{Heard: l.heardSince(now), At: now}
	w := l.window(now, c.Heard)
	var err error
	c.Due, err = l.due(ctx, w)
	if err != nil {
		l.hear.failed()
		c.Due = true
	}
	return c, err
}

func (l *Liveness) due(ctx context.Context, w window) (bool, error) {
	sys := viewer.SystemContext(ctx)
	if w.silent {
		silent, err := l.DB.Ent.Node.Query().Where(silentSince(w.stale)).Exist(sys)
		if err != nil {
			return true, fmt.Errorf("looking for silent nodes: %w", err)
		}
		if silent {
			return true, nil
		}
	}
	if !w.lost {
		return false, nil
	}
	lost, err := l.DB.Ent.Job.Query().Where(onLostNodes(service.HasNodeWith(lostSince(w.lostAt)))).Exist(sys)
	if err != nil {
		return true, fmt.Errorf("looking for jobs on lost nodes: %w", err)
	}
	return lost, nil
}
