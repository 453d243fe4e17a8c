package functions

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/app"
	"github.com/levers9/levers9/ent/container"
	"github.com/levers9/levers9/ent/predicate"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
)

// CancelTask cancels a call that has not ended. A running call cannot be
// interrupted inside its process, so its container is stopped; the other
// calls that container held go back to the queue without losing an
// attempt.
func (s *Service) CancelTask(ctx context.Context, id string) (*ent.Task, error) {
	t, err := s.DB.Ent.Task.Get(ctx, id)
	if ent.IsNotFound(err) {
		return nil, fault.Missing(fmt.Sprintf("task %q", clip(id)))
	}
	if err != nil {
		return nil, fmt.Errorf("reading task %s: %w", id, err)
	}
	if Ended(t.State) {
		return t, nil
	}
	running, ctrID := t.State == task.StateRUNNING, t.ContainerID
	n, err := s.DB.Ent.Task.Update().Where(task.ID(id), task.StateIn(task.StatePENDING, task.StateRUNNING)).
		SetState(task.StateCANCELLED).SetFinishedAt(s.now()).
		SetErrorKind(KindCancelled).SetErrorMessage("cancelled by " + jobs.ActorName(ctx, s.DB.Ent, viewer.FromContext(ctx))).
		Save(ctx)
	if err != nil {
		return nil, fmt.Errorf("cancelling task %s: %w", id, err)
	}
	if n > 0 {
		if err := s.refreshMaps(ctx, s.DB.Ent, mapsOf([]*ent.Task{t})); err != nil {
			return nil, err
		}
		s.ended(ctx, []*ent.Task{t})
		if running && ctrID != "" {
			s.dropContainer(ctx, ctrID, "its call "+id+" was cancelled")
		}
	}
	return s.DB.Ent.Task.Get(ctx, id)
}

// CancelMap cancels every item of a map that has not ended. Items
// already running finish in their containers; their results are
// dropped.
func (s *Service) CancelMap(ctx context.Context, id string) (*ent.FunctionMap, error) {
	_, err := s.DB.Ent.FunctionMap.Get(ctx, id)
	if ent.IsNotFound(err) {
		return nil, fault.Missing(fmt.Sprintf("map %q", clip(id)))
	}
	if err != nil {
		return nil, fmt.Errorf("reading map %s: %w", id, err)
	}
	err = s.DB.InTx(ctx, func(tx *database.Tx) error {
		n, err := tx.Ent.Task.Update().Where(task.MapID(id), task.StateIn(task.StatePENDING, task.StateRUNNING)).
			SetState(task.StateCANCELLED).SetFinishedAt(s.now()).
			SetErrorKind(KindCancelled).SetErrorMessage("map cancelled by " + jobs.ActorName(ctx, tx.Ent, viewer.FromContext(ctx))).
			Save(ctx)
		if err != nil || n == 0 {
			return err
		}
		return s.refreshMaps(ctx, tx.Ent, []string{id})
	})
	if err != nil {
		return nil, fmt.Errorf("cancelling map %s: %w", id, err)
	}
	s.publish(ctx, notify.TopicMap, id)
	return s.DB.Ent.FunctionMap.Get(ctx, id)
}

// StopApp stops an app: its calls that have not ended are cancelled and
// its containers stopped, so nothing of it runs or is billed any more.
// A deployed app stops with every version.
func (s *Service) StopApp(ctx context.Context, id, reason string) (*ent.App, error) {
	a, err := s.DB.Ent.App.Query().Where(app.ID(id)).WithFunctions().Only(ctx)
	if ent.IsNotFound(err) {
		return nil, fault.Missing(fmt.Sprintf("app %q", clip(id)))
	}
	if err != nil {
		return nil, fmt.Errorf("reading app %s: %w", id, err)
	}
	if reason == "" {
		reason = "stopped by " + viewer.FromContext(ctx).UserID
	}
	s.Log.Debug("stopping app", "app", id, "reason", reason)
	if a.State != app.StateSTOPPED {
		if err := s.DB.Ent.App.UpdateOneID(id).SetState(app.StateSTOPPED).SetStoppedAt(s.now()).SetStopReason(reason).Exec(ctx); err != nil {
			return nil, fmt.Errorf("stopping app %s: %w", id, err)
		}
	}
	if err := s.cancelOpen(ctx, task.AppID(id), "app stopped: "+reason); err != nil {
		return nil, err
	}
	ids := make([]string, len(a.Edges.Functions))
	for i, f := range a.Edges.Functions {
		ids[i] = f.ID
	}
	s.stopContainers(ctx, ids, "app stopped")
	s.Log.Info("app stopped", "app", id, "reason", reason)
	return s.DB.Ent.App.Get(ctx, id)
}

// cancelOpen cancels the calls matching which that have not ended.
func (s *Service) cancelOpen(ctx context.Context, which predicate.Task, msg string) error {
	open, err := s.DB.Ent.Task.Query().Where(which, task.StateIn(task.StatePENDING, task.StateRUNNING)).All(ctx)
	if err != nil {
		return fmt.Errorf("reading open calls: %w", err)
	}
	if len(open) == 0 {
		return nil
	}
	if _, err := s.DB.Ent.Task.Update().Where(which, task.StateIn(task.StatePENDING, task.StateRUNNING)).
		SetState(task.StateCANCELLED).SetFinishedAt(s.now()).
		SetErrorKind(KindCancelled).SetErrorMessage(clipTo(msg, 4000)).Save(ctx); err != nil {
		return fmt.Errorf("cancelling calls: %w", err)
	}
	if err := s.refreshMaps(ctx, s.DB.Ent, mapsOf(open)); err != nil {
		return err
	}
	s.ended(ctx, open)
	return nil
}

// stopContainers stops the containers of functions fnIDs and wakes their
// runners, which leave.
func (s *Service) stopContainers(ctx context.Context, fnIDs []string, reason string) {
	sys := viewer.SystemContext(ctx)
	for _, id := range fnIDs {
		ctrs, err := s.DB.Ent.Container.Query().Where(container.FunctionID(id), container.StateNEQ(container.StateSTOPPED)).All(sys)
		if err != nil {
			s.Log.Warn("reading containers to stop", "function", id, "err", err)
			continue
		}
		for _, c := range ctrs {
			s.stopContainer(ctx, c, reason)
		}
		s.publish(ctx, notify.TopicFunction, id)
	}
}

// dropContainer stops container id and puts the other calls it held back
// in the queue, their attempt not counted: they did not fail.
func (s *Service) dropContainer(ctx context.Context, id, reason string) {
	sys := viewer.SystemContext(ctx)
	c, err := s.DB.Ent.Container.Get(sys, id)
	if err != nil {
		s.Log.Warn("reading container", "container", id, "err", err)
		return
	}
	s.stopContainer(ctx, c, reason)
	n, err := s.DB.Ent.Task.Update().Where(task.ContainerID(id), task.StateEQ(task.StateRUNNING)).
		SetState(task.StatePENDING).AddAttempt(-1).ClearDeadline().ClearContainerID().Save(sys)
	if err != nil {
		s.Log.Warn("requeueing calls of a stopped container", "container", id, "err", err)
	}
	if n > 0 {
		s.publish(ctx, notify.TopicFunction, c.FunctionID)
		s.scale(ctx, c.FunctionID)
	}
}

// ended wakes whoever follows calls that just ended: their awaiters, or
// their map's followers (one signal per map).
func (s *Service) ended(ctx context.Context, ts []*ent.Task) {
	maps := map[string]bool{}
	for _, t := range ts {
		if t.MapID != "" {
			maps[t.MapID] = true
			continue
		}
		s.publish(ctx, notify.TopicTask, t.ID)
	}
	for m := range maps {
		s.publish(ctx, notify.TopicMap, m)
	}
}
