package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/jobevent"
	"github.com/levers9/levers9/ent/predicate"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/jobs/jobstate"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/metering"
	"github.com/levers9/levers9/internal/viewer"
)

// ServiceRef names the run of one service a node's agent reports on: the
// job, the service, the node reporting and the attempt it runs (0 means 1).
type ServiceRef struct {
	JobID, Service, NodeID string
	Attempt                int
}

func (r ServiceRef) attempt() int { return max(r.Attempt, 1) }

// runsHere holds for services placed on r's node whose job is at r's
// attempt and in one of states. Updates carry it too, so a requeue
// committed between the check and the write is not overwritten: a late
// report of attempt 1 never changes attempt 2.
func (r ServiceRef) runsHere(states ...job.Status) predicate.Service {
	on := []predicate.Job{job.Attempt(r.attempt())}
	if len(states) > 0 {
		on = append(on, job.StatusIn(states...))
	}
	return service.And(service.NodeID(r.NodeID), service.HasJobWith(on...))
}

// OwnService is the service r names (its ID and status only), if r's node
// runs it for the job's current attempt. Reports about anything else (a
// job never given, or a run the job has since been requeued from) are
// logged and ignored (nil).
func (s *Service) OwnService(ctx context.Context, r ServiceRef) (*ent.Service, error) {
	return s.ownService(ctx, s.DB.Ent, r)
}

// RanAttempt reports whether the node r names ran r's attempt of its job
// before the job was requeued from it after the node was lost, and the job
// has the service r names: that node may still send the attempt's output,
// kept while it was cut off. Its state reports change nothing any more.
func (s *Service) RanAttempt(ctx context.Context, r ServiceRef) (bool, error) {
	sys := viewer.SystemContext(ctx)
	ran, err := s.DB.Ent.JobEvent.Query().
		Where(jobevent.JobID(r.JobID), jobevent.NodeID(r.NodeID), jobevent.Attempt(r.attempt())).
		Exist(sys)
	if err != nil || !ran {
		return false, err
	}
	has, err := s.DB.Ent.Service.Query().Where(service.JobID(r.JobID), service.Name(r.Service)).Exist(sys)
	if err != nil {
		return false, fmt.Errorf("finding service %s of job %s: %w", r.Service, r.JobID, err)
	}
	return has, nil
}

func (s *Service) ownService(ctx context.Context, c *ent.Client, r ServiceRef) (*ent.Service, error) {
	svc, err := c.Service.Query().
		Where(service.JobID(r.JobID), service.Name(r.Service), r.runsHere()).
		Select(service.FieldID, service.FieldStatus).
		Only(viewer.SystemContext(ctx))
	if ent.IsNotFound(err) {
		s.Log.Warn("agent reported a service it does not run for the job's current attempt; ignored",
			"node", r.NodeID, "job", r.JobID, "service", r.Service, "attempt", r.Attempt)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("finding service %s of job %s: %w", r.Service, r.JobID, err)
	}
	return svc, nil
}

// ServiceRunning records that the service r names runs since at, with its
// host ports; once every service of the job has started, the job runs
// (JobRunning, in the same transaction).
func (s *Service) ServiceRunning(ctx context.Context, r ServiceRef, ports []jobspec.Port, at time.Time) error {
	var started *jobChange
	err := s.DB.InTx(ctx, func(tx *database.Tx) error {
		var err error
		started, err = s.serviceRunning(ctx, tx, r, ports, at)
		return err
	})
	if err == nil && started != nil {
		s.signalChange(ctx, *started)
	}
	return err
}

// serviceRunning is ServiceRunning inside tx; started, when the job runs
// now (or was asked to: see running), is the change to signal.
func (s *Service) serviceRunning(ctx context.Context, tx *database.Tx, r ServiceRef, ports []jobspec.Port, at time.Time) (started *jobChange, err error) {
	sys := viewer.SystemContext(ctx)
	// The update finds the service itself: only when it changes nothing
	// is the report looked at (a stranger's is logged by ownService; a
	// repeated one changes nothing).
	to, _ := jobstate.ServiceTo(jobstate.ServiceRunning)
	n, err := tx.Ent.Service.Update().
		Where(service.JobID(r.JobID), service.Name(r.Service), service.StatusIn(jobstate.ServiceFrom(jobstate.ServiceRunning)...),
			r.runsHere(jobstate.From(jobstate.ServiceRunning)...)).
		SetStatus(to).SetStartedAt(at).SetHostPorts(ports).Save(sys)
	if err != nil {
		return nil, fmt.Errorf("recording service %s running: %w", r.Service, err)
	}
	if n == 0 {
		_, err := s.ownService(ctx, tx.Ent, r)
		return nil, err
	}
	j, waiting, err := s.running(ctx, tx, r.JobID, at, true)
	if err != nil || waiting {
		return nil, err
	}
	if j == nil { // refused: signalled as before, reading what names it
		return &jobChange{jobID: r.JobID}, nil
	}
	c := changeOf(j)
	return &c, nil
}

// ServiceEnd is how a service ended: its exit code if it has one, and
// whether it failed (with the agent's reason) or exited 0.
type ServiceEnd struct {
	ExitCode *int
	Failed   bool
	Reason   string
}

// event is the end's event and the reason its service records.
func (end ServiceEnd) event() (jobstate.Event, string) {
	if end.Failed {
		return jobstate.ServiceFailed, end.Reason
	}
	return jobstate.ServiceExited, "exited 0"
}

// ServiceEnded records the end of the service r names at at and settles
// the job when that decides it: one failure fails it (the agent stops the
// others), all exited completes it. Done says the job is over on r's node:
// it ended now, or had ended and every service of it has finished.
func (s *Service) ServiceEnded(ctx context.Context, r ServiceRef, end ServiceEnd, at time.Time) (done bool, err error) {
	var settled *jobChange
	err = s.DB.InTx(ctx, func(tx *database.Tx) error {
		var err error
		done, settled, err = s.serviceEnded(ctx, tx, r, end, at)
		return err
	})
	if err == nil && settled != nil {
		s.signalChange(ctx, *settled)
	}
	return done, err
}

// serviceEnded is ServiceEnded inside tx; settled, when it ended the job,
// is the change to signal.
func (s *Service) serviceEnded(ctx context.Context, tx *database.Tx, r ServiceRef, end ServiceEnd, at time.Time) (done bool, settled *jobChange, err error) {
	e, _ := end.event()
	// The usual report ends a running service: the update finds it by job
	// and name. Only when that changes nothing is the report looked at (a
	// stranger's is logged by ownService) and the service's state read.
	n, err := recordEnd(ctx, tx, r, end, at, service.StatusRunning, service.JobID(r.JobID), service.Name(r.Service))
	if err != nil {
		return false, nil, err
	}
	if n == 0 {
		svc, err := s.ownService(ctx, tx.Ent, r)
		if svc == nil || err != nil {
			return false, nil, err
		}
		if n, err = recordEnd(ctx, tx, r, end, at, svc.Status, service.ID(svc.ID)); err != nil || n == 0 {
			// n == 0: requeued meanwhile (this run no longer counts), or
			// an end the service's state does not take.
			return false, nil, err
		}
	}
	return s.settle(ctx, tx, r, e, end.Reason, at)
}

// recordEnd records the end of the service r names, found by where, if it
// is in state from; how many rows it changed (0 or 1).
func recordEnd(ctx context.Context, tx *database.Tx, r ServiceRef, end ServiceEnd, at time.Time, from service.Status, where ...predicate.Service) (int, error) {
	e, reason := end.event()
	to, ok := jobstate.NextService(e, from)
	if !ok {
		return 0, nil
	}
	upd := tx.Ent.Service.Update().
		Where(where...).
		Where(service.StatusEQ(from), r.runsHere(jobstate.From(e)...)).
		SetNillableExitCode(end.ExitCode)
	if to != from {
		upd.SetStatus(to).SetStatusReason(clip(reason, 1000)).SetFinishedAt(at)
	}
	n, err := upd.Save(viewer.SystemContext(ctx))
	if err != nil {
		return 0, fmt.Errorf("recording end of service %s: %w", r.Service, err)
	}
	return n, nil
}

// settle ends the job r names, inside tx, when the end of its service
// (event e) decides it; done as for ServiceEnded, settled, when it ended
// it, the change to signal.
func (s *Service) settle(ctx context.Context, tx *database.Tx, r ServiceRef, e jobstate.Event, failure string, at time.Time) (done bool, settled *jobChange, err error) {
	sys := viewer.SystemContext(ctx)
	j, err := tx.Ent.Job.Query().Where(job.ID(r.JobID)).WithServices().Only(sys)
	if err != nil {
		return false, nil, fmt.Errorf("loading job %s: %w", r.JobID, err)
	}
	if j.Status != job.StatusPending && j.Status != job.StatusRunning {
		// The job ended with this service running: this is when its
		// node stopped it.
		if err := s.billStop(ctx, tx, j, r, at); err != nil {
			return false, nil, err
		}
		for _, svc := range j.Edges.Services {
			if svc.FinishedAt == nil {
				return false, nil, nil
			}
		}
		return true, nil, nil
	}
	if j.Attempt != r.attempt() {
		return false, nil, nil // requeued meanwhile
	}
	states := make([]service.Status, len(j.Edges.Services))
	for i, svc := range j.Edges.Services {
		states[i] = svc.Status
	}
	next, ok := jobstate.Settle(e, states)
	if !ok {
		return false, nil, nil
	}
	reason := "all services exited 0"
	if next == jobstate.Failed {
		reason = "service " + r.Service + " failed"
		if failure != "" {
			reason += ": " + failure
		}
	}
	if j.Status == job.StatusPending && (next != jobstate.Failed || anyStarted(j.Edges.Services)) {
		// Services ran (every one, and exited; or one, and failed) before
		// the job's RUNNING was counted: record the run, from the first
		// service's start, so the job is billed and timed.
		started, _, err := s.running(ctx, tx, j.ID, at, false)
		if err != nil {
			return false, nil, err
		}
		if started != nil && started.Status != job.StatusRunning {
			c := changeOf(started) // stopped out of tokens at its start
			return true, &c, nil
		}
	}
	if _, err := s.end(ctx, tx, next, j.ID, j, j.Attempt, clip(reason, 1000), at); err != nil {
		return false, nil, fmt.Errorf("settling job %s: %w", j.ID, err)
	}
	c := changeOf(j) // its services' nodes are as loaded: an end moves none
	return true, &c, nil
}

// anyStarted reports whether one of svcs has run.
func anyStarted(svcs []*ent.Service) bool {
	for _, svc := range svcs {
		if svc.StartedAt != nil {
			return true
		}
	}
	return false
}

// billStop bills the time the service r names ran on after its job j ended,
// until at, when its node stopped it (metering.Stopped). Not for a job
// the platform ended without its node (billed to the node's last sign of
// life) nor one stopped because its payer could not pay on.
func (s *Service) billStop(ctx context.Context, tx *database.Tx, j *ent.Job, r ServiceRef, at time.Time) error {
	if !Ended(j.Status) || j.Attempt != r.attempt() {
		return nil
	}
	switch j.StatusReason {
	case ReasonNodeLost, ReasonLostOnRestart, OutOfTokens:
		return nil
	}
	return metering.Stopped(ctx, tx.Ent, j, r.Service, at, s.Now())
}
