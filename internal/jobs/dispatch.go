package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/jobs/jobstate"
	"github.com/levers9/levers9/internal/viewer"
)

// Dispatched records that job id is being sent to node nodeID at at. The
// mark is conditional, set before sending, so two replicas (or two wakes)
// never both send it: false when the job was sent already or is no longer
// waiting for it.
func (s *Service) Dispatched(ctx context.Context, id, nodeID string, at time.Time) (bool, error) {
	n, err := s.DB.Ent.Service.Update().
		Where(service.JobID(id), service.NodeID(nodeID), service.DispatchedAtIsNil(),
			service.StatusIn(jobstate.ServiceFrom(jobstate.Dispatched)...),
			service.HasJobWith(job.StatusIn(jobstate.From(jobstate.Dispatched)...))).
		SetDispatchedAt(at).Save(viewer.SystemContext(ctx))
	if err != nil {
		return false, fmt.Errorf("marking job %s dispatched: %w", id, err)
	}
	return n > 0, nil
}

// Resend has job id, sent to node nodeID and lost by its agent before it
// started, sent again: the node's next dispatch picks it up.
func (s *Service) Resend(ctx context.Context, id, nodeID string) error {
	err := s.DB.Ent.Service.Update().
		Where(service.JobID(id), service.NodeID(nodeID),
			service.StatusIn(jobstate.ServiceFrom(jobstate.Resent)...),
			service.HasJobWith(job.StatusIn(jobstate.From(jobstate.Resent)...))).
		ClearDispatchedAt().Exec(viewer.SystemContext(ctx))
	if err != nil {
		return fmt.Errorf("resending job %s: %w", id, err)
	}
	return nil
}

// LostOnRestart fails running job id, which its node's agent came back
// without.
func (s *Service) LostOnRestart(ctx context.Context, id string, at time.Time) error {
	if _, err := s.endNow(ctx, jobstate.Failed, id, ReasonLostOnRestart, at); err != nil {
		return fmt.Errorf("failing lost job %s: %w", id, err)
	}
	return nil
}
