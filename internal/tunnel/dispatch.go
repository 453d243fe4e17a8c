package tunnel

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/jobs/jobstate"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// dispatchChunk bounds the job IDs of one query: a large node's backlog
// stays within the databases' parameter limits.
const dispatchChunk = 500

// dispatch pushes the node's desired state to the agent: a Start for every
// job placed on it and not yet sent, a Stop for every job it runs that
// ended on the server side (cancelled, failed, out of tokens).
func (s *session) dispatch(ctx context.Context) error {
	sys := viewer.SystemContext(ctx)
	// Two queries for every job to start, with its services, not one per
	// job (under load a wake finds many). The first reads only the node's
	// waiting services on the (node_id, status) index, never every service
	// the node ran, whatever the planner's statistics say.
	ids, err := s.srv.DB.Ent.Service.Query().
		Where(service.NodeID(s.nodeID), service.StatusIn(jobstate.ServiceFrom(jobstate.Dispatched)...), service.DispatchedAtIsNil()).
		Unique(true).Select(service.FieldJobID).Strings(sys)
	if err != nil {
		return fmt.Errorf("finding jobs to start: %w", err)
	}
	var pending []*ent.Job
	for chunk := range slices.Chunk(ids, dispatchChunk) {
		js, err := s.srv.DB.Ent.Job.Query().
			Where(job.IDIn(chunk...), job.StatusIn(jobstate.From(jobstate.Dispatched)...)).
			WithServices().All(sys)
		if err != nil {
			return fmt.Errorf("finding jobs to start: %w", err)
		}
		pending = append(pending, js...)
	}
	for _, j := range pending {
		if err := s.start(ctx, j); err != nil {
			return err
		}
	}
	active := s.activeJobs()
	if len(active) == 0 {
		return nil
	}
	ended, err := s.srv.DB.Ent.Job.Query().
		Where(job.IDIn(active...), job.StatusIn(jobstate.EndedStates...)).
		All(sys)
	if err != nil {
		return fmt.Errorf("finding ended jobs: %w", err)
	}
	for _, j := range ended {
		s.markActive(j.ID, false)
		if j.Status == job.StatusComplete {
			continue // nothing of it runs any more
		}
		stop := wire.Stop{JobID: j.ID, Reason: clip(j.StatusReason, wire.MaxReasonBytes), GraceSeconds: int(s.srv.stopGrace().Seconds())}
		s.log.Info("stopping job on node", "job", j.ID, "status", j.Status)
		if err := s.send(ctx, stop); err != nil {
			return err
		}
	}
	return nil
}

// start sends job j (read with its services) to the agent once:
// dispatched_at is set first, conditionally, so two replicas (or two
// wakes) never both send it.
func (s *session) start(ctx context.Context, j *ent.Job) error {
	jobID := j.ID
	if j.Status != job.StatusPending {
		return nil
	}
	for _, svc := range j.Edges.Services {
		if svc.NodeID != s.nodeID {
			// The scheduler places a job whole; a split job is its bug,
			// and starting half of it would help no one.
			s.log.Warn("job placed partly on another node; not starting it", "job", jobID, "service", svc.Name, "otherNode", svc.NodeID)
			return nil
		}
	}
	msg := startMessage(j)
	err := s.planMounts(ctx, j, &msg)
	if err == nil {
		err = msg.Validate()
	}
	if err != nil {
		s.log.Warn("job cannot be sent to the agent", "job", jobID, "err", err)
		if err := s.srv.Jobs.MarkEnded(ctx, jobID, job.StatusError, clip("cannot be started: "+err.Error(), 1000), s.srv.now()); err != nil {
			return fmt.Errorf("failing unsendable job %s: %w", jobID, err)
		}
		return nil
	}
	sent, err := s.srv.Jobs.Dispatched(ctx, jobID, s.nodeID, s.srv.now())
	if err != nil {
		return err
	}
	if !sent {
		return nil // sent by someone else meanwhile
	}
	s.markActive(jobID, true)
	s.log.Info("starting job on node", "job", jobID, "services", len(msg.Services))
	if s.srv.Tracer == nil || j.TraceParent == "" {
		return s.send(ctx, msg)
	}
	return s.sendTraced(ctx, j, msg)
}

// planMounts adds j's mounts to msg as this node gets them.
func (s *session) planMounts(ctx context.Context, j *ent.Job, msg *wire.Start) error {
	if len(j.Spec.Mounts) == 0 {
		return nil
	}
	if s.srv.Mounts == nil {
		return errors.New("this server does not mount buckets into jobs")
	}
	ms, err := s.srv.Mounts.Plan(ctx, j, s.nodeID)
	if err != nil {
		return err
	}
	msg.Mounts = ms
	return nil
}

// reconcile compares what the agent runs with what the server believes
// runs on the node: jobs the server no longer wants, and runs of an
// attempt the job has been requeued from, are stopped; jobs the agent lost
// fail (if they ran) or are sent again (if they never started). The
// Reconcile tells the agent, per job it keeps, where its stored log ends, so
// an agent that reattached to a job after a restart resumes its output
// without gaps or duplicates.
func (s *session) reconcile(ctx context.Context, running []wire.RunningService) error {
	sys := viewer.SystemContext(ctx)
	svcs, err := s.srv.DB.Ent.Service.Query().
		Where(service.NodeID(s.nodeID), service.DispatchedAtNotNil(),
			service.HasJobWith(job.StatusIn(job.StatusPending, job.StatusRunning))).
		WithJob().All(sys)
	if err != nil {
		return fmt.Errorf("finding the node's jobs: %w", err)
	}
	wanted := map[string]*ent.Job{}
	for _, svc := range svcs {
		wanted[svc.JobID] = svc.Edges.Job
	}
	reported := map[string][]wire.RunningService{}
	var unwanted []string
	for _, r := range running {
		j := wanted[r.JobID]
		if j == nil || j.Attempt != max(r.Attempt, 1) {
			if _, seen := reported[r.JobID]; !seen && !slices.Contains(unwanted, r.JobID) {
				unwanted = append(unwanted, r.JobID)
			}
			continue
		}
		reported[r.JobID] = append(reported[r.JobID], r)
	}
	for id, j := range wanted {
		if _, ok := reported[id]; ok {
			continue
		}
		if j.Status == job.StatusRunning {
			s.log.Warn("agent lost a running job", "job", id)
			if err := s.srv.Jobs.LostOnRestart(ctx, id, s.srv.now()); err != nil {
				return err
			}
			continue
		}
		// Sent but never started: send it again (dispatch picks it up).
		if err := s.srv.Jobs.Resend(ctx, id, s.nodeID); err != nil {
			return err
		}
	}
	// Stops go before the Reconcile and before any Start a resend makes,
	// so an old run is stopped before a new attempt of its job arrives.
	for _, id := range unwanted {
		s.log.Warn("agent runs a job (or an attempt of it) the server does not want there; stopping it", "job", id)
		stop := wire.Stop{JobID: id, Reason: "not wanted on this node", GraceSeconds: int(s.srv.stopGrace().Seconds())}
		if err := s.send(ctx, stop); err != nil {
			return err
		}
	}
	var keep []wire.RunningService
	for id, rs := range reported {
		attempt := wanted[id].Attempt
		seq, last, err := s.srv.Logs.Tail(sys, id, attempt)
		if err != nil {
			return err
		}
		for _, r := range rs {
			r.Attempt, r.LogSeq, r.LastLine = attempt, uint64(seq), last[r.Service]
			keep = append(keep, r)
		}
		s.markActive(id, true)
	}
	return s.send(ctx, wire.Reconcile{Running: keep})
}
