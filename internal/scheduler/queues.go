package scheduler

import (
	"context"
	"errors"
	"fmt"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/jobs/jobstate"
	"github.com/levers9/levers9/internal/viewer"
)

// NodeQueues returns the IDs of the queues node nodeID serves: the queues
// to schedule when the node comes online or frees capacity.
func (s *Service) NodeQueues(ctx context.Context, nodeID string) ([]string, error) {
	ids, err := s.DB.Ent.Queue.Query().
		Where(queue.HasNodesWith(node.ID(nodeID))).
		IDs(viewer.SystemContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("listing queues of node %s: %w", nodeID, err)
	}
	return ids, nil
}

// PendingQueues returns the IDs of the queues with pending jobs (some may
// be placed already and wait for their node: a pass costs them nothing).
// Each queue looks for one on its (queue_id, status) index: the distinct
// queue IDs of pending jobs read that index whole, every job ever run, on
// every periodic check (TestSchedulingReadsNoHistory).
func (s *Service) PendingQueues(ctx context.Context) ([]string, error) {
	ids, err := s.DB.Ent.Queue.Query().
		Where(queue.HasJobsWith(jobstate.In(job.StatusPending))).
		IDs(viewer.SystemContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("listing queues with pending jobs: %w", err)
	}
	return ids, nil
}

// ScheduleNodeQueues schedules every queue of node nodeID in turn, for
// callers that run it directly (tests, the embedded node); the server
// enqueues the River work instead.
func (s *Service) ScheduleNodeQueues(ctx context.Context, nodeID string) (placed int, err error) {
	ids, err := s.NodeQueues(ctx, nodeID)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, id := range ids {
		n, err := s.ScheduleQueue(ctx, id)
		placed += n
		errs = append(errs, err)
	}
	return placed, errors.Join(errs...)
}
