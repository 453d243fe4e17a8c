package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/jobevent"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/jobs/jobstate"
	"github.com/levers9/levers9/internal/metering"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
)

// NodeLost ends or requeues job id, whose node is gone: a job that never
// started, or that has a retry left, goes back to the scheduler; any other
// fails with ReasonNodeLost. Its run so far is billed up to the last
// heartbeat of its nodes, not through the TTL and grace it took to give up
// on them. Calling it again, or on two replicas, is harmless.
func (s *Service) NodeLost(ctx context.Context, id string, now time.Time) (requeued bool, err error) {
	sys := viewer.SystemContext(ctx)
	j, err := s.DB.Ent.Job.Get(sys, id)
	if err != nil {
		return false, fmt.Errorf("loading job %s: %w", id, err)
	}
	retry := j.Status == job.StatusPending || j.Attempt <= j.Retries
	alive, err := s.lastSignOfLife(ctx, id, now)
	if err != nil {
		return false, err
	}
	if !retry {
		s.Log.Warn("job lost with its node", "job", id, "billed_to", alive)
		err := s.DB.InTx(ctx, func(tx *database.Tx) error {
			// Charged up to its last sign of life first: the end then
			// charges nothing more.
			if j.StartedAt != nil {
				if err := metering.Lost(sys, tx.Ent, j, alive); err != nil {
					return fmt.Errorf("charging lost job %s: %w", id, err)
				}
			}
			ended, err := s.end(ctx, tx, jobstate.NodeLost, id, j, j.Attempt, ReasonNodeLost, now)
			if err == nil && !ended {
				return errRefused
			}
			return err
		})
		if errors.Is(err, errRefused) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		s.signal(ctx, id)
		return false, nil
	}
	reason := fmt.Sprintf("node lost; requeued (attempt %d of %d)", j.Attempt+1, j.Retries+1)
	attempt := j.Attempt + 1
	if j.Status == job.StatusPending {
		// Sent to the node, some of its services may have run and logged:
		// the next run is a new attempt, so its lines (numbered from 1)
		// never collide with those. Never sent: nothing ran, same attempt.
		sent, err := s.DB.Ent.Service.Query().Where(service.JobID(id), service.DispatchedAtNotNil()).Exist(sys)
		if err != nil {
			return false, fmt.Errorf("loading services of job %s: %w", id, err)
		}
		if sent {
			reason = fmt.Sprintf("node lost while the job started; requeued (attempt %d)", attempt)
		} else {
			reason, attempt = "node lost before the job started; requeued", j.Attempt
		}
	}
	err = s.DB.InTx(ctx, func(tx *database.Tx) error {
		// The run so far is charged; without a start time the meter leaves
		// the job alone until it runs again.
		if j.StartedAt != nil {
			if err := metering.CloseAttempt(sys, tx.Ent, j, alive); err != nil {
				return err
			}
		}
		// The node of the run that ends, read before the requeue clears
		// it: its agent may still send that run's output once back in
		// touch (it froze the run, keeping what it printed).
		var ranOn string
		if attempt != j.Attempt {
			nodes, err := tx.Ent.Service.Query().Where(service.JobID(id), service.NodeIDNEQ("")).
				Select(service.FieldNodeID).Strings(sys)
			if err != nil {
				return fmt.Errorf("loading the node of job %s: %w", id, err)
			}
			if len(nodes) > 0 {
				ranOn = nodes[0] // a job's services share one node
			}
		}
		to, _ := jobstate.To(jobstate.Requeued)
		n, err := tx.Ent.Job.Update().
			Where(job.ID(id), job.StatusEQ(j.Status), job.StatusIn(jobstate.From(jobstate.Requeued)...), job.Attempt(j.Attempt)).
			SetStatus(to).SetStatusReason(reason).SetAttempt(attempt).ClearStartedAt().
			Save(sys)
		if err != nil {
			return err
		}
		if n == 0 {
			return errRefused
		}
		svcTo, _ := jobstate.ServiceTo(jobstate.Requeued)
		err = tx.Ent.Service.Update().Where(service.JobID(id), service.StatusIn(jobstate.ServiceFrom(jobstate.Requeued)...)).
			SetStatus(svcTo).SetStatusReason(reason).
			ClearNodeID().ClearDispatchedAt().ClearStartedAt().ClearFinishedAt().ClearExitCode().ClearHostPorts().
			Exec(sys)
		if err != nil {
			return err
		}
		if ranOn == "" {
			return recordEvent(ctx, tx.Ent, j, "", jobevent.Status(to), reason, now)
		}
		return recordRequeue(ctx, tx.Ent, j, jobevent.Status(to), reason, now, ranOn)
	})
	if errors.Is(err, errRefused) {
		return true, nil
	}
	if err != nil {
		return true, fmt.Errorf("requeueing job %s: %w", id, err)
	}
	s.Log.Warn("job requeued: its node was lost", "job", id, "attempt", attempt)
	s.publish(ctx, notify.TopicJob, id)
	s.publish(ctx, notify.TopicQueue, j.QueueID)
	return true, nil
}

// lastSignOfLife is the last heartbeat of the nodes job id runs on (at most
// now): the last moment they proved its run alive.
func (s *Service) lastSignOfLife(ctx context.Context, id string, now time.Time) (time.Time, error) {
	nodes, err := s.DB.Ent.Node.Query().
		Where(node.HasServicesWith(service.JobID(id)), node.LastHeartbeatAtNotNil()).
		All(viewer.SystemContext(ctx))
	if err != nil {
		return now, fmt.Errorf("loading nodes of job %s: %w", id, err)
	}
	var alive time.Time
	for _, n := range nodes {
		if n.LastHeartbeatAt.After(alive) {
			alive = *n.LastHeartbeatAt
		}
	}
	if alive.IsZero() || alive.After(now) {
		return now, nil
	}
	return alive, nil
}
