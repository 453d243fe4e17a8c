package functions

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/container"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/internal/autoscaling"
	"github.com/levers9/levers9/internal/blueprints"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// live are the states of a container that counts toward its function.
var live = []container.State{container.StateSTARTING, container.StateREADY}

// startRetryAfter keeps calls and the reconcile pass from submitting a
// container again and again while the last submission was refused (no
// tokens, no access): one try per function this often, its reason shown
// to the waiting calls meanwhile.
const startRetryAfter = 30 * time.Second

// scaleLocks serialises scaling of one function within this replica, so
// a burst of calls does not start a container per call.
var scaleLocks sync.Map // function ID → *sync.Mutex

// scale starts the containers function fnID needs now. Failures are
// logged and shown as the waiting calls' reason; the reconcile pass
// tries again.
func (s *Service) scale(ctx context.Context, fnID string) {
	if err := s.scaleFunction(ctx, fnID); err != nil {
		s.Log.Warn("scaling function", "function", fnID, "err", err)
	}
}

func (s *Service) scaleFunction(ctx context.Context, fnID string) error {
	mu := scaleLock(fnID)
	mu.Lock()
	defer mu.Unlock()
	sys := viewer.SystemContext(ctx)
	c := s.DB.Ent
	f, err := c.Function.Query().Where(function.ID(fnID)).WithApp().Only(sys)
	if err != nil {
		return fmt.Errorf("reading function %s: %w", fnID, err)
	}
	if !serving(f) {
		return nil
	}
	in, err := s.counts(sys, f)
	if err != nil {
		return err
	}
	n := autoscaling.ToStart(in)
	if n == 0 {
		return s.keepBox(ctx, f, in.Live)
	}
	last, err := c.Container.Query().Where(container.FunctionID(fnID)).Order(ent.Desc(container.FieldCreatedAt)).First(sys)
	if err == nil && last.State == container.StateSTOPPED && last.JobID == "" && s.now().Sub(last.CreatedAt) < startRetryAfter {
		return nil // the last start failed moments ago
	}
	for k := 0; k < n; k++ {
		if ok, err := s.startContainer(ctx, f); err != nil || !ok {
			return err // a refused start is not tried again at once
		}
	}
	return nil
}

func scaleLock(fnID string) *sync.Mutex {
	mu, _ := scaleLocks.LoadOrStore(fnID, &sync.Mutex{})
	return mu.(*sync.Mutex)
}

// counts gathers the autoscaler's input for f.
func (s *Service) counts(sys context.Context, f *ent.Function) (autoscaling.Input, error) {
	c := s.DB.Ent
	now := s.now()
	backlog, err := c.Task.Query().Where(task.FunctionID(f.ID), task.StateEQ(task.StatePENDING),
		task.Or(task.NotBeforeIsNil(), task.NotBeforeLTE(now))).Count(sys)
	if err != nil {
		return autoscaling.Input{}, fmt.Errorf("counting calls of %s: %w", f.ID, err)
	}
	running, err := c.Task.Query().Where(task.FunctionID(f.ID), task.StateEQ(task.StateRUNNING)).Count(sys)
	if err != nil {
		return autoscaling.Input{}, fmt.Errorf("counting calls of %s: %w", f.ID, err)
	}
	lives, err := c.Container.Query().Where(container.FunctionID(f.ID), container.StateIn(live...)).Count(sys)
	if err != nil {
		return autoscaling.Input{}, fmt.Errorf("counting containers of %s: %w", f.ID, err)
	}
	return autoscaling.Input{
		Backlog: backlog, Running: running, Live: lives, Concurrency: f.Concurrency,
		Min: f.MinContainers, KeepWarm: f.KeepWarm, Max: f.MaxContainers,
	}, nil
}

// startContainer records a container of f and submits its job as f's
// owner, so it is placed, limited and billed like any job of theirs.
// It reports false when the queue refused it.
func (s *Service) startContainer(ctx context.Context, f *ent.Function) (bool, error) {
	sys := viewer.SystemContext(ctx)
	ctr, err := s.DB.Ent.Container.Create().
		SetTenantID(f.TenantID).SetEnvironmentID(f.EnvironmentID).
		SetFunctionID(f.ID).SetOwnerID(f.OwnerID).Save(sys)
	if err != nil {
		return false, fmt.Errorf("recording a container of %s: %w", f.ID, err)
	}
	// A function runs the code of its own version; rows deployed before
	// versions name none and run their app's.
	code := f.CodeHash
	if code == "" {
		code = f.Edges.App.CodeHash
	}
	spec := containerJob(f.QueueID, f.ProjectID, f.Name, f.Image, f.CPU, f.MemoryMib, f.Gpus, f.GpuTypes, f.Kind, f.Ports, f.Command,
		&wire.Runner{ContainerID: ctr.ID, FunctionID: f.ID, CodeHash: code, Secrets: f.Secrets})
	if spec.Services[0].Venv, err = s.venv(sys, f); err != nil {
		return false, err
	}
	owner := viewer.NewContext(ctx, &viewer.Viewer{UserID: f.OwnerID, TenantID: f.TenantID, EnvironmentID: f.EnvironmentID})
	j, err := s.Jobs.Submit(owner, spec)
	if err != nil {
		// The reason waiting calls show until a start succeeds.
		if _, uerr := s.DB.Ent.Container.UpdateOneID(ctr.ID).SetState(container.StateSTOPPED).
			SetStopReason("could not start: " + err.Error()).SetStoppedAt(s.now()).Save(sys); uerr != nil {
			s.Log.Warn("recording a failed container start", "container", ctr.ID, "err", uerr)
		}
		var fe *fault.Error
		if errors.As(err, &fe) {
			// The queue refused it (no tokens, no access): the calls say
			// so; it is not a failure of the server.
			s.Log.Info("container refused", "function", f.ID, "reason", err)
			return false, nil
		}
		return false, fmt.Errorf("starting a container of %s: %w", f.ID, err)
	}
	if _, err := s.DB.Ent.Container.UpdateOneID(ctr.ID).SetJobID(j.ID).Save(sys); err != nil {
		return false, fmt.Errorf("recording the job of container %s: %w", ctr.ID, err)
	}
	s.Log.Info("container starting", "function", f.ID, "container", ctr.ID, "job", j.ID)
	return true, nil
}

// stopContainer ends a container's job (the runner may be stuck in a
// call) and marks it stopped.
func (s *Service) stopContainer(ctx context.Context, ctr *ent.Container, reason string) {
	sys := viewer.SystemContext(ctx)
	if _, err := s.DB.Ent.Container.Update().Where(container.ID(ctr.ID), container.StateNEQ(container.StateSTOPPED)).
		SetState(container.StateSTOPPED).SetStopReason(reason).SetStoppedAt(s.now()).Save(sys); err != nil {
		s.Log.Warn("marking container stopped", "container", ctr.ID, "err", err)
	}
	if ctr.JobID == "" {
		return
	}
	j, err := s.DB.Ent.Job.Get(sys, ctr.JobID)
	if err != nil || jobs.Ended(j.Status) {
		return
	}
	if err := s.Jobs.MarkEnded(sys, ctr.JobID, job.StatusCancelled, reason, s.now()); err != nil {
		s.Log.Warn("stopping a container's job", "container", ctr.ID, "job", ctr.JobID, "err", err)
	}
}

// venv is the virtual environment f's container may run in on a node
// without containers: its blueprint's, when it has one of pip packages
// (blueprints.Venv); nil otherwise.
func (s *Service) venv(sys context.Context, f *ent.Function) (*wire.Venv, error) {
	if f.BlueprintID == "" {
		return nil, nil
	}
	bp, err := s.DB.Ent.Blueprint.Get(sys, f.BlueprintID)
	if ent.IsNotFound(err) {
		return nil, nil // it runs the image, which says what is missing
	}
	if err != nil {
		return nil, fmt.Errorf("loading the blueprint of %s: %w", f.ID, err)
	}
	if bp.Image != f.Image {
		return nil, nil
	}
	return blueprints.Venv(bp), nil
}
