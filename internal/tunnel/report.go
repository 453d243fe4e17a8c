package tunnel

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/predicate"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// ownService is the service the agent reports on, if this node runs it for
// the job's current attempt. Reports about anything else (a job never
// given, or a run the job has since been requeued from) are logged and
// ignored: a late report of attempt 1 must never change attempt 2.
func (s *session) ownService(ctx context.Context, jobID string, attempt int, name string) (*ent.Service, error) {
	svc, err := s.srv.DB.Ent.Service.Query().
		Where(service.JobID(jobID), service.Name(name), s.runsHere(attempt)).
		Only(viewer.SystemContext(ctx))
	if ent.IsNotFound(err) {
		s.log.Warn("agent reported a service it does not run for the job's current attempt; ignored",
			"job", jobID, "service", name, "attempt", attempt)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("finding service %s of job %s: %w", name, jobID, err)
	}
	return svc, nil
}

// runsHere holds for services placed on this node whose job is at attempt
// attempt. Updates carry it too, so a requeue committed between the check
// and the write is not overwritten.
func (s *session) runsHere(attempt int) predicate.Service {
	return service.And(service.NodeID(s.nodeID), service.HasJobWith(job.Attempt(max(attempt, 1))))
}

// stateChange records a service's new state and, when it decides the job's
// state, the job's.
func (s *session) stateChange(ctx context.Context, m wire.StateChange) error {
	svc, err := s.ownService(ctx, m.JobID, m.Attempt, m.Service)
	if svc == nil || err != nil {
		return err
	}
	sys := viewer.SystemContext(ctx)
	now := s.srv.now()
	switch m.State {
	case wire.StateStarting:
		return nil
	case wire.StateRunning:
		var ports []jobspec.Port
		for _, p := range m.Ports {
			ports = append(ports, jobspec.Port{Name: p.Name, Port: p.Port})
		}
		err := s.srv.DB.Ent.Service.Update().
			Where(service.ID(svc.ID), service.StatusEQ(service.StatusPending), s.runsHere(m.Attempt)).
			SetStatus(service.StatusRunning).SetStartedAt(now).SetHostPorts(ports).Exec(sys)
		if err != nil {
			return fmt.Errorf("recording service %s running: %w", m.Service, err)
		}
		waiting, err := s.srv.DB.Ent.Service.Query().
			Where(service.JobID(m.JobID), service.StartedAtIsNil()).Count(sys)
		if err != nil {
			return fmt.Errorf("counting services of job %s: %w", m.JobID, err)
		}
		if waiting == 0 {
			if err := s.srv.Jobs.MarkRunning(ctx, m.JobID, now); err != nil {
				return fmt.Errorf("marking job %s running: %w", m.JobID, err)
			}
		}
		return nil
	}
	// EXITED or FAILED.
	status := service.StatusComplete
	reason := "exited 0"
	if m.State == wire.StateFailed {
		status, reason = service.StatusError, m.Reason
	}
	upd := s.srv.DB.Ent.Service.Update().Where(service.ID(svc.ID), s.runsHere(m.Attempt)).SetNillableExitCode(m.ExitCode)
	if svc.Status == service.StatusPending || svc.Status == service.StatusRunning {
		upd.SetStatus(status).SetStatusReason(clip(reason, 1000)).SetFinishedAt(now)
	}
	n, err := upd.Save(sys)
	if err != nil {
		return fmt.Errorf("recording end of service %s: %w", m.Service, err)
	}
	if n == 0 {
		return nil // requeued meanwhile: this run no longer counts
	}
	return s.settle(ctx, m)
}

// settle ends the job when a final service state decides it: one failure
// fails it (the agent stops the others), all exited completes it.
func (s *session) settle(ctx context.Context, m wire.StateChange) error {
	sys := viewer.SystemContext(ctx)
	j, err := s.srv.DB.Ent.Job.Query().Where(job.ID(m.JobID)).WithServices().Only(sys)
	if err != nil {
		return fmt.Errorf("loading job %s: %w", m.JobID, err)
	}
	if j.Status != job.StatusPending && j.Status != job.StatusRunning {
		s.forgetIfDone(j)
		return nil
	}
	if j.Attempt != max(m.Attempt, 1) {
		return nil // requeued meanwhile
	}
	now := s.srv.now()
	if m.State == wire.StateFailed {
		reason := "service " + m.Service + " failed"
		if m.Reason != "" {
			reason += ": " + m.Reason
		}
		if err := s.srv.Jobs.MarkEnded(ctx, j.ID, job.StatusError, clip(reason, 1000), now); err != nil {
			return fmt.Errorf("failing job %s: %w", j.ID, err)
		}
		s.markActive(j.ID, false)
		return nil
	}
	for _, svc := range j.Edges.Services {
		if svc.Status != service.StatusComplete {
			return nil
		}
	}
	if j.Status == job.StatusPending {
		// Every service ran and exited before the last one's RUNNING was
		// counted: record the run so the job is billed and timed.
		if err := s.srv.Jobs.MarkRunning(ctx, j.ID, now); err != nil {
			return fmt.Errorf("marking job %s running: %w", j.ID, err)
		}
	}
	if err := s.srv.Jobs.MarkEnded(ctx, j.ID, job.StatusComplete, "all services exited 0", now); err != nil {
		return fmt.Errorf("completing job %s: %w", j.ID, err)
	}
	s.markActive(j.ID, false)
	return nil
}

func (s *session) forgetIfDone(j *ent.Job) {
	for _, svc := range j.Edges.Services {
		if svc.FinishedAt == nil {
			return
		}
	}
	s.markActive(j.ID, false)
}

// logs stores lines of the current attempt of a job placed on this node,
// then wakes followers.
func (s *session) logs(ctx context.Context, m wire.Logs) error {
	if len(m.Lines) == 0 {
		return nil
	}
	// Every service the batch names must be one this node runs for the
	// attempt, not only the first line's.
	checked := map[string]bool{}
	for _, l := range m.Lines {
		if checked[l.Service] {
			continue
		}
		checked[l.Service] = true
		svc, err := s.ownService(ctx, m.JobID, m.Attempt, l.Service)
		if svc == nil || err != nil {
			return err
		}
	}
	if err := joblog.Append(ctx, s.srv.DB.Ent, m.JobID, max(m.Attempt, 1), m.Lines); err != nil {
		return err
	}
	if s.srv.Bus != nil {
		if err := s.srv.Bus.Publish(ctx, notify.TopicJob, m.JobID); err != nil {
			s.log.Warn("signalling new log lines", "job", m.JobID, "err", err)
		}
	}
	return nil
}
