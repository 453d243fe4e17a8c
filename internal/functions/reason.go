package functions

import (
	"context"
	"fmt"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/container"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/internal/viewer"
)

// WaitReason says in words why a pending call has not started: a retry's
// backoff, a container that is starting (and which phase it is in), no
// capacity in the queue (the scheduler's own reason), every container
// busy, or a container that could not start. Empty once it started.
func (s *Service) WaitReason(ctx context.Context, t *ent.Task) (string, error) {
	if t.State != task.StatePENDING {
		return "", nil
	}
	now := s.now()
	if t.NotBefore != nil && t.NotBefore.After(now) {
		return fmt.Sprintf("retrying in %s (attempt %d of %d failed: %s)",
			t.NotBefore.Sub(now).Round(time.Second), t.Attempt, t.MaxAttempts, t.ErrorKind), nil
	}
	sys := viewer.SystemContext(ctx)
	f, err := s.DB.Ent.Function.Get(ctx, t.FunctionID)
	if err != nil {
		return "", fmt.Errorf("reading function %s: %w", t.FunctionID, err)
	}
	ctrs, err := s.DB.Ent.Container.Query().Where(container.FunctionID(f.ID)).
		Order(ent.Desc(container.FieldCreatedAt)).Limit(50).WithJob().All(sys)
	if err != nil {
		return "", fmt.Errorf("reading containers of %s: %w", f.ID, err)
	}
	ready := 0
	for _, c := range ctrs {
		switch c.State {
		case container.StateREADY:
			ready++
		case container.StateSTARTING:
			if c.Edges.Job != nil && c.Edges.Job.Status == job.StatusPending {
				if r := c.Edges.Job.StatusReason; r != "" && r != "submitted" {
					return "no capacity for a container yet: " + r, nil
				}
				return "a container is waiting to be placed", nil
			}
			switch {
			case c.ScheduledAt == nil && c.CodeFetchedAt == nil:
				return "a container is being placed on a node", nil
			case c.CodeFetchedAt == nil:
				return "a container is fetching the code", nil
			case c.ImageReadyAt == nil:
				return "a container is pulling its image", nil
			default:
				return "a container is starting Python and importing the code", nil
			}
		}
	}
	if ready > 0 && ready >= f.MaxContainers {
		return fmt.Sprintf("all %d containers are busy (max_containers %d)", ready, f.MaxContainers), nil
	}
	if len(ctrs) > 0 && ctrs[0].State == container.StateSTOPPED && ctrs[0].JobID == "" {
		return ctrs[0].StopReason, nil
	}
	if ready > 0 {
		return "waiting for a free container", nil
	}
	return "waiting for a container to be started", nil
}
