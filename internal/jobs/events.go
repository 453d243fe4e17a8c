package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/jobevent"
	"github.com/levers9/levers9/internal/viewer"
)

// recordEvent stores a transition of job j (or of its service, when named)
// through c, inside the caller's transaction.
func recordEvent(ctx context.Context, c *ent.Client, j *ent.Job, service string, status jobevent.Status, reason string, at time.Time) error {
	err := c.JobEvent.Create().
		SetTenantID(j.TenantID).SetEnvironmentID(j.EnvironmentID).
		SetJobID(j.ID).SetService(service).SetStatus(status).SetReason(reason).SetAt(at).
		Exec(viewer.SystemContext(ctx))
	if err != nil {
		return fmt.Errorf("recording %s of job %s: %w", status, j.ID, err)
	}
	return nil
}
