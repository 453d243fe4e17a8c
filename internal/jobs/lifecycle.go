package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/jobevent"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/jobs/jobstate"
	"github.com/levers9/levers9/internal/metering"
	"github.com/levers9/levers9/internal/metrics"
	"github.com/levers9/levers9/internal/viewer"
)

// errRefused rolls back a transition whose conditional update found the
// job no longer in a state the event applies from (or at another
// attempt): nothing it wrote stays.
var errRefused = errors.New("transition refused: the job changed meanwhile")

// MarkRunning records that job id started running at at: its prices are
// fixed and its start fee charged in the same transaction.
func (s *Service) MarkRunning(ctx context.Context, id string, at time.Time) error {
	defer s.signal(ctx, id)
	return s.DB.InTx(ctx, func(tx *database.Tx) error {
		_, _, err := s.running(ctx, tx, id, at, false)
		return err
	})
}

// running is the package's running with the budget's answer applied: a
// job whose payer cannot pay its start (under `stop`) ends "out of tokens"
// in the same transaction, so it runs no longer than its node takes to
// stop it instead of until the meter's next tick (then the job returned
// says so in its status).
func (s *Service) running(ctx context.Context, tx *database.Tx, id string, at time.Time, ofService bool) (_ *ent.Job, waiting bool, _ error) {
	j, waiting, err := running(ctx, tx.Ent, id, at, ofService)
	if err != nil || j == nil || !j.MeteringClosed {
		return j, waiting, err
	}
	if _, err := s.end(ctx, tx, jobstate.OutOfTokens, id, j, j.Attempt, OutOfTokens, at); err != nil {
		return nil, false, fmt.Errorf("stopping job %s out of tokens at its start: %w", id, err)
	}
	s.Log.Info("stopped a job at its start: payer out of tokens", "job", id)
	j.Status, _ = jobstate.To(jobstate.OutOfTokens)
	j.StatusReason = OutOfTokens
	return j, false, nil
}

// running applies JobRunning to job id through c, inside the caller's
// transaction, and returns the job with its services; nil when the job
// refused it (not pending any more: cancelled meanwhile, or started
// already). ofService: the caller recorded the start of one service, and
// the job runs once every service has one; until then nothing changes
// (waiting). Otherwise the job runs now with all its services.
func running(ctx context.Context, c *ent.Client, id string, at time.Time, ofService bool) (_ *ent.Job, waiting bool, _ error) {
	sys := viewer.SystemContext(ctx)
	// Read first, with its services: they say whether every service has
	// started, the meter prices them, and they name the nodes the change
	// is signalled to. The prices then go in the update that decides the
	// transition, on the job's state at that moment.
	j, err := c.Job.Query().Where(job.ID(id)).WithServices().Only(sys)
	if ent.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("loading job %s: %w", id, err)
	}
	if ofService {
		for _, svc := range j.Edges.Services {
			if svc.StartedAt == nil {
				return nil, true, nil
			}
		}
	}
	// Billed from when its first service ran: one may have run, and even
	// exited, while the others were still starting.
	from := at
	for _, svc := range j.Edges.Services {
		if svc.StartedAt != nil && svc.StartedAt.Before(from) {
			from = *svc.StartedAt
		}
	}
	to, ok := jobstate.Next(jobstate.JobRunning, j.Status)
	if !ok {
		return nil, false, nil
	}
	rates, perMinute, err := metering.Prices(sys, c, j)
	if err != nil {
		return nil, false, err
	}
	n, err := c.Job.Update().
		Where(job.ID(id), job.StatusIn(jobstate.From(jobstate.JobRunning)...)).
		SetStatus(to).SetStatusReason("running").SetStartedAt(from).
		SetRates(rates).SetPricePerMinute(perMinute).
		Save(sys)
	if err != nil {
		return nil, false, fmt.Errorf("marking job %s running: %w", id, err)
	}
	if n == 0 {
		return nil, false, nil
	}
	j.Status, j.StatusReason, j.StartedAt, j.Rates, j.PricePerMinute = to, "running", &from, rates, perMinute
	if !ofService {
		svcTo, _ := jobstate.ServiceTo(jobstate.JobRunning)
		err = c.Service.Update().
			Where(service.JobID(id), service.StatusIn(jobstate.ServiceFrom(jobstate.JobRunning)...)).
			SetStatus(svcTo).SetStartedAt(at).Exec(sys)
		if err != nil {
			return nil, false, fmt.Errorf("marking services of job %s running: %w", id, err)
		}
		for _, svc := range j.Edges.Services { // as the update left them
			if _, ok := jobstate.NextService(jobstate.JobRunning, svc.Status); ok {
				svc.Status, svc.StartedAt = svcTo, &at
			}
		}
	}
	if err := recordEvent(ctx, c, j, "", jobevent.Status(to), "running", at); err != nil {
		return nil, false, err
	}
	metrics.JobStartWait.WithLabelValues(string(j.Kind)).Observe(max(at.Sub(j.CreatedAt).Seconds(), 0))
	if _, err := metering.Started(sys, c, j, from); err != nil {
		return nil, false, err
	}
	return j, false, nil
}

// MarkEnded records that job id ended at at with status (COMPLETE, ERROR or
// CANCELLED) and reason, and charges its last partial minute.
func (s *Service) MarkEnded(ctx context.Context, id string, status job.Status, reason string, at time.Time) error {
	e, ok := jobstate.Ending(status)
	if !ok {
		return fmt.Errorf("ending job %s: %s is not an end", id, status)
	}
	defer s.signal(ctx, id)
	return s.DB.InTx(ctx, func(tx *database.Tx) error {
		_, err := s.end(ctx, tx, e, id, nil, 0, reason, at)
		return err
	})
}

// end applies ending event e to job id inside tx (at attempt attempt,
// unless 0), charges its last partial minute and has its capacity
// scheduled again; false when the job refused it (ended already, or
// requeued to another attempt), and then it wrote nothing. known is the
// job as the caller read it, or nil (see end).
func (s *Service) end(ctx context.Context, tx *database.Tx, e jobstate.Event, id string, known *ent.Job, attempt int, reason string, at time.Time) (bool, error) {
	ended, err := end(ctx, tx.Ent, e, id, known, attempt, reason, at)
	if err != nil || !ended {
		return false, err
	}
	if s.Freed != nil {
		// Last in the transaction: it writes the queue's shared pass row.
		tx.BeforeCommit("freed "+id, func(ctx context.Context) error {
			if err := s.Freed(ctx, tx.SQL, id); err != nil {
				return fmt.Errorf("scheduling capacity freed by job %s: %w", id, err)
			}
			return nil
		})
	}
	return true, nil
}

// end moves a job that e applies to into e's end state, through c. known,
// when not nil, is job id as the caller read it in any state: only what
// never changes (its tenant and environment, which name its event) is
// taken from it, and the job is not read again. Its services, if loaded,
// were read in this transaction (settle's): see servicesLeft.
func end(ctx context.Context, c *ent.Client, e jobstate.Event, id string, known *ent.Job, attempt int, reason string, at time.Time) (bool, error) {
	sys := viewer.SystemContext(ctx)
	to, ok := jobstate.To(e)
	if !ok || !jobstate.Ends(e) {
		return false, fmt.Errorf("ending job %s: %s does not end a job", id, e)
	}
	upd := c.Job.Update().Where(job.ID(id), job.StatusIn(jobstate.From(e)...))
	if attempt > 0 {
		upd.Where(job.Attempt(attempt))
	}
	n, err := upd.SetStatus(to).SetStatusReason(reason).SetFinishedAt(at).Save(sys)
	if err != nil {
		return false, fmt.Errorf("ending job %s: %w", id, err)
	}
	if n == 0 {
		return false, nil
	}
	if servicesLeft(e, known, attempt) {
		svcTo, _ := jobstate.ServiceTo(e)
		err = c.Service.Update().
			Where(service.JobID(id), service.StatusIn(jobstate.ServiceFrom(e)...)).
			SetStatus(svcTo).SetStatusReason(reason).SetFinishedAt(at).
			Exec(sys)
		if err != nil {
			return false, fmt.Errorf("ending services of job %s: %w", id, err)
		}
	}
	metrics.JobsEnded.WithLabelValues(string(to)).Inc()
	j := known
	if j == nil {
		if j, err = c.Job.Get(sys, id); err != nil {
			return false, err
		}
	}
	if err := recordEvent(ctx, c, j, "", jobevent.Status(to), reason, at); err != nil {
		return false, err
	}
	// It reads the job's metering itself.
	if _, err := metering.ChargeRun(sys, c, id, at); err != nil {
		return false, err
	}
	return true, nil
}

// servicesLeft reports whether ending a job with e may move one of its
// services. Only known's services can tell it may not: read in this
// transaction, none in a state e moves (the last service's end usually
// decides its job, so every service has ended already), at the attempt
// whose job update just held. A service goes back to such a state only
// with a requeue, which changes the attempt, and the job's row, updated
// first, is locked against one until this transaction ends.
func servicesLeft(e jobstate.Event, known *ent.Job, attempt int) bool {
	if known == nil || attempt == 0 || known.Attempt != attempt {
		return true
	}
	svcs, err := known.Edges.ServicesOrErr()
	if err != nil {
		return true // not loaded
	}
	for _, svc := range svcs {
		if _, ok := jobstate.NextService(e, svc.Status); ok {
			return true
		}
	}
	return false
}

// endNow applies ending event e to job id in a transaction of its own and
// signals the change; false when the job refused it.
func (s *Service) endNow(ctx context.Context, e jobstate.Event, id, reason string, at time.Time) (bool, error) {
	var ended bool
	err := s.DB.InTx(ctx, func(tx *database.Tx) error {
		var err error
		ended, err = s.end(ctx, tx, e, id, nil, 0, reason, at)
		return err
	})
	if err != nil {
		return false, err
	}
	if ended {
		s.signal(ctx, id)
	}
	return ended, nil
}
