package functions

import (
	"context"
	"fmt"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/container"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
)

// busless is how often readyContainer looks again without a bus to
// wake it.
const busless = time.Second

// useEvery is how often a connection's use of a container is written at
// most: below the shortest scale-down window (1 s).
const useEvery = time.Second

// RealtimeContainer returns the job of a READY container of REALTIME
// function f, starting one when none runs, waiting up to wait. A
// WebSocket is no call: the container is started here, not by a backlog.
func (s *Service) RealtimeContainer(ctx context.Context, f *ent.Function, wait time.Duration) (jobID string, err error) {
	if f.Kind != function.KindREALTIME {
		return "", fault.Invalid("function", "%s is a %s function, not a realtime one", f.Name, f.Kind)
	}
	return s.readyContainer(ctx, f, wait)
}

// maxReadyStarts bounds the containers one wait for a ready container
// starts.
const maxReadyStarts = 2

// readyContainer returns the job of a READY container of f (a REALTIME
// or BOX function, which serve connections rather than calls), starting
// one when none runs, waiting up to wait. It waits on the function's
// topic, which a container's runner wakes as it becomes ready.
func (s *Service) readyContainer(ctx context.Context, f *ent.Function, wait time.Duration) (jobID string, err error) {
	var sig <-chan struct{}
	if s.Bus != nil {
		ch, stop := s.Bus.Subscribe(notify.TopicFunction, f.ID)
		defer stop()
		sig = ch
	}
	deadline := time.NewTimer(max(wait, time.Millisecond))
	defer deadline.Stop()
	sys := viewer.SystemContext(ctx)
	starts := 0
	for {
		fn, err := s.DB.Ent.Function.Query().Where(function.ID(f.ID)).WithApp().Only(sys)
		if err != nil {
			return "", fmt.Errorf("reading function %s: %w", f.ID, err)
		}
		if !serving(fn) {
			return "", fault.New(fault.NotFound, "version %d of app %s is stopped", fn.Version, fn.Edges.App.Name)
		}
		ctrs, err := s.DB.Ent.Container.Query().
			Where(container.FunctionID(f.ID), container.StateIn(live...)).
			Order(ent.Desc(container.FieldCreatedAt)).All(sys)
		if err != nil {
			return "", fmt.Errorf("reading containers of %s: %w", f.ID, err)
		}
		for _, c := range ctrs {
			if c.State == container.StateREADY && c.JobID != "" {
				// A connection is the container's work: its idle time
				// (scale-down) counts from the last one handed to it. At
				// most one write a second: a box's every HTTP request
				// comes here.
				if now := s.now(); c.LastTaskAt == nil || now.Sub(*c.LastTaskAt) >= useEvery {
					if err := s.DB.Ent.Container.UpdateOneID(c.ID).SetLastTaskAt(now).Exec(sys); err != nil {
						return "", fmt.Errorf("recording a connection to container %s: %w", c.ID, err)
					}
				}
				return c.JobID, nil
			}
		}
		if len(ctrs) == 0 {
			// None live: the first look starts one; a container that
			// ended before it was ready (a crash, its port still held)
			// is replaced once, then the caller hears why at once
			// rather than wait out the deadline for nothing.
			if starts == maxReadyStarts {
				return "", fault.New(fault.Unavailable, "the container of %s ended before it was ready (%d tries): see its logs", f.Name, starts)
			}
			if err := s.startOne(ctx, fn); err != nil {
				return "", err
			}
			starts++
			continue
		}
		poll := make(<-chan time.Time)
		if sig == nil {
			poll = time.After(busless)
		}
		select {
		case <-sig:
		case <-poll:
		case <-deadline.C:
			return "", fault.New(fault.Unavailable, "no container of %s was ready within %s%s: try again", f.Name, wait, s.waitingFor(sys, ctrs))
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// startOne starts a container of f unless one is live (under f's scale
// lock, so connections arriving together start one).
func (s *Service) startOne(ctx context.Context, f *ent.Function) error {
	mu := scaleLock(f.ID)
	mu.Lock()
	defer mu.Unlock()
	n, err := s.DB.Ent.Container.Query().
		Where(container.FunctionID(f.ID), container.StateIn(live...)).Count(viewer.SystemContext(ctx))
	if err != nil {
		return fmt.Errorf("counting containers of %s: %w", f.ID, err)
	}
	if n > 0 {
		return nil
	}
	ok, err := s.startContainer(ctx, f)
	if err != nil {
		return err
	}
	if !ok {
		return fault.New(fault.Unavailable, "no container of %s could start: %s", f.Name, s.lastRefusal(ctx, f.ID))
	}
	return nil
}

// lastRefusal is why the last container of fnID could not start.
func (s *Service) lastRefusal(ctx context.Context, fnID string) string {
	c, err := s.DB.Ent.Container.Query().Where(container.FunctionID(fnID)).
		Order(ent.Desc(container.FieldCreatedAt)).First(viewer.SystemContext(ctx))
	if err != nil {
		return "unknown"
	}
	return c.StopReason
}

// waitingFor says what the newest of ctrs waits for when its job has not
// started (" (its job is PENDING: port 8000 is in use on every node)"),
// so a caller who waited in vain learns why; "" otherwise.
func (s *Service) waitingFor(sys context.Context, ctrs []*ent.Container) string {
	if len(ctrs) == 0 || ctrs[0].JobID == "" {
		return ""
	}
	j, err := s.DB.Ent.Job.Get(sys, ctrs[0].JobID)
	if err != nil || j.Status != job.StatusPending || j.StatusReason == "" {
		return ""
	}
	return fmt.Sprintf(" (its job %s is PENDING: %s)", j.ID, j.StatusReason)
}
