package functions

import (
	"context"
	"errors"
	"fmt"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/container"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
)

// Reconcile is the safety net behind the signals: ephemeral apps whose
// client went silent are stopped, containers whose job
// ended are marked stopped and the calls they held fail their attempt
// (and are retried while attempts remain), calls past their deadline
// time out and their stuck container is stopped, and every serving
// function (of a running or deployed app, its version not stopped) is
// scaled to its backlog and floor.
func (s *Service) Reconcile(ctx context.Context) error {
	sys := viewer.SystemContext(ctx)
	var errs []error
	if err := s.stopAbandoned(sys); err != nil {
		errs = append(errs, err)
	}
	if err := s.reapContainers(sys); err != nil {
		errs = append(errs, err)
	}
	if err := s.timeOut(sys); err != nil {
		errs = append(errs, err)
	}
	fns, err := s.DB.Ent.Function.Query().Where(servingFunction()).IDs(sys)
	if err != nil {
		errs = append(errs, fmt.Errorf("listing functions: %w", err))
	}
	for _, id := range fns {
		if err := s.scaleFunction(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// reapContainers settles containers whose job has ended.
func (s *Service) reapContainers(sys context.Context) error {
	ctrs, err := s.DB.Ent.Container.Query().
		Where(container.StateNEQ(container.StateSTOPPED), container.HasJobWith(job.StatusIn(job.StatusComplete, job.StatusError, job.StatusCancelled))).
		WithJob().All(sys)
	if err != nil {
		return fmt.Errorf("listing ended containers: %w", err)
	}
	for _, c := range ctrs {
		reason := "its job ended: " + string(c.Edges.Job.Status)
		if c.Edges.Job.StatusReason != "" {
			reason += " (" + c.Edges.Job.StatusReason + ")"
		}
		if err := s.lose(sys, c, reason); err != nil {
			return err
		}
		if c.ProcessStartedAt == nil {
			if err := s.failedStarts(sys, c.FunctionID, reason); err != nil {
				return err
			}
		}
	}
	return nil
}

// MaxFailedStarts is how many containers of a function in a row may end
// before their runner started (an image that does not exist or has no
// Python, a command that fails) before the calls waiting for one fail.
const MaxFailedStarts = 3

// failedStarts fails the waiting calls of function fnID once its last
// MaxFailedStarts containers all ended without starting their runner:
// starting more would fail the same way, forever. A new call starts a
// container again.
func (s *Service) failedStarts(sys context.Context, fnID, reason string) error {
	last, err := s.DB.Ent.Container.Query().Where(container.FunctionID(fnID), container.JobIDNEQ("")).
		Order(ent.Desc(container.FieldCreatedAt)).Limit(MaxFailedStarts).All(sys)
	if err != nil {
		return fmt.Errorf("reading containers of %s: %w", fnID, err)
	}
	if len(last) < MaxFailedStarts {
		return nil
	}
	for _, c := range last {
		if c.State != container.StateSTOPPED || c.ProcessStartedAt != nil {
			return nil
		}
	}
	waiting, err := s.DB.Ent.Task.Query().Where(task.FunctionID(fnID), task.StateEQ(task.StatePENDING)).All(sys)
	if err != nil || len(waiting) == 0 {
		return err
	}
	msg := fmt.Sprintf("%d containers in a row stopped before their runner started; the last: %s", MaxFailedStarts, reason)
	if _, err := s.DB.Ent.Task.Update().Where(task.FunctionID(fnID), task.StateEQ(task.StatePENDING)).
		SetState(task.StateERROR).SetFinishedAt(s.now()).SetErrorKind(KindStartFailed).
		SetErrorMessage(clipTo(msg, 4000)).Save(sys); err != nil {
		return fmt.Errorf("failing calls of %s: %w", fnID, err)
	}
	if err := s.refreshMaps(sys, s.DB.Ent, mapsOf(waiting)); err != nil {
		return err
	}
	s.ended(sys, waiting)
	s.Log.Warn("function's containers fail to start: its waiting calls failed", "function", fnID, "calls", len(waiting), "reason", reason)
	return nil
}

// lose marks container c stopped; the calls it was running fail their
// attempt as "container lost".
func (s *Service) lose(sys context.Context, c *ent.Container, reason string) error {
	if err := s.DB.Ent.Container.UpdateOneID(c.ID).SetState(container.StateSTOPPED).
		SetStopReason(clipTo(reason, 1000)).SetStoppedAt(s.now()).Exec(sys); err != nil {
		return fmt.Errorf("marking container %s stopped: %w", c.ID, err)
	}
	ts, err := s.DB.Ent.Task.Query().Where(task.ContainerID(c.ID), task.StateEQ(task.StateRUNNING)).All(sys)
	if err != nil {
		return fmt.Errorf("reading calls of container %s: %w", c.ID, err)
	}
	return s.failAll(sys, ts, Failure{Kind: KindContainerLost, Message: "the container running it stopped: " + reason})
}

// timeOut fails the attempts of calls past their deadline: the runner
// did not report them (it is stuck or gone), so their container stops.
func (s *Service) timeOut(sys context.Context) error {
	ts, err := s.DB.Ent.Task.Query().Where(task.StateEQ(task.StateRUNNING), task.DeadlineLT(s.now())).All(sys)
	if err != nil {
		return fmt.Errorf("listing overdue calls: %w", err)
	}
	if len(ts) == 0 {
		return nil
	}
	if err := s.failAll(sys, ts, Failure{Kind: KindTimeout, Message: "the call ran past its timeout and its runner did not answer"}); err != nil {
		return err
	}
	stopped := map[string]bool{}
	for _, t := range ts {
		if t.ContainerID == "" || stopped[t.ContainerID] {
			continue
		}
		stopped[t.ContainerID] = true
		if c, err := s.DB.Ent.Container.Get(sys, t.ContainerID); err == nil {
			s.stopContainer(sys, c, "a call it ran timed out")
		}
	}
	return nil
}

// failAll fails the running attempts of ts with f.
func (s *Service) failAll(sys context.Context, ts []*ent.Task, f Failure) error {
	var ended []*ent.Task
	fns := map[string]bool{}
	var ids []string
	for _, t := range ts {
		if !fns[t.FunctionID] {
			fns[t.FunctionID] = true
			ids = append(ids, t.FunctionID)
		}
	}
	dead, err := s.deadLetters(sys, ids)
	if err != nil {
		return err
	}
	now := s.now()
	for _, t := range ts {
		u := s.DB.Ent.Task.UpdateOneID(t.ID).Where(task.StateEQ(task.StateRUNNING), task.Attempt(t.Attempt))
		if !failAttempt(u.Mutation(), t, f, now, now, dead[t.FunctionID]) {
			ended = append(ended, t)
		}
		fns[t.FunctionID] = true
		if err := u.Exec(sys); err != nil && !ent.IsNotFound(err) {
			return fmt.Errorf("failing call %s: %w", t.ID, err)
		}
	}
	if err := s.refreshMaps(sys, s.DB.Ent, mapsOf(ended)); err != nil {
		return err
	}
	s.ended(sys, ended)
	for id := range fns {
		s.publish(sys, notify.TopicFunction, id)
	}
	return nil
}
