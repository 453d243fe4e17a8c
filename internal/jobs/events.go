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
	return saveEvent(ctx, eventOf(c, j, service, status, reason, at), j, status)
}

// recordRequeue records the requeue of job j's run (at its attempt as
// read, before the requeue) from node ranOn: the node may still send
// that run's output, and RanAttempt takes it.
func recordRequeue(ctx context.Context, c *ent.Client, j *ent.Job, status jobevent.Status, reason string, at time.Time, ranOn string) error {
	return saveEvent(ctx, eventOf(c, j, "", status, reason, at).SetNodeID(ranOn).SetAttempt(j.Attempt), j, status)
}

func saveEvent(ctx context.Context, e *ent.JobEventCreate, j *ent.Job, status jobevent.Status) error {
	if err := e.Exec(viewer.SystemContext(ctx)); err != nil {
		return fmt.Errorf("recording %s of job %s: %w", status, j.ID, err)
	}
	return nil
}

func eventOf(c *ent.Client, j *ent.Job, service string, status jobevent.Status, reason string, at time.Time) *ent.JobEventCreate {
	return c.JobEvent.Create().
		SetTenantID(j.TenantID).SetEnvironmentID(j.EnvironmentID).
		SetJobID(j.ID).SetService(service).SetStatus(status).SetReason(reason).SetAt(at)
}
