package docker

import (
	"context"
	"errors"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/levers9/levers9/agent/runtime"
)

var _ runtime.Freezer = (*job)(nil)

// Freeze implements runtime.Freezer: every running container of the job
// is paused (the daemon's cgroup freezer).
func (j *job) Freeze(ctx context.Context) error {
	return runtime.SetFrozen(&j.freeze, true, j.services, func(s *service) error { return s.pause(ctx) })
}

// Thaw implements runtime.Freezer: every container of the job is
// unpaused, also one found paused after an agent restart.
func (j *job) Thaw(ctx context.Context) error {
	return runtime.SetFrozen(&j.freeze, false, j.services, func(s *service) error { return s.unpause(ctx) })
}

func (j *job) isFrozen() bool { return j.freeze.Frozen() }

// pause pauses the service's container if it runs, after a start under
// way.
func (s *service) pause(ctx context.Context) error {
	s.startMu.Lock()
	defer s.startMu.Unlock()
	s.mu.Lock()
	id, running, paused := s.id, s.running, s.paused
	s.mu.Unlock()
	if !running || paused || id == "" {
		return nil
	}
	_, err := s.job.rt.cli.ContainerPause(ctx, id, client.ContainerPauseOptions{})
	switch {
	case err == nil:
	case cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err):
		return nil // gone, or not running (it ended: its end is reported)
	default:
		return fmt.Errorf("pausing the container of service %s: %w", s.name, err)
	}
	s.mu.Lock()
	s.paused = true
	s.mu.Unlock()
	s.job.log.Info("service frozen", "service", s.name, "container", shortID(id))
	return nil
}

// unpause unpauses the service's container; one not paused is left as it
// is.
func (s *service) unpause(ctx context.Context) error {
	s.mu.Lock()
	id, paused := s.id, s.paused
	s.paused = false
	s.mu.Unlock()
	if id == "" {
		return nil
	}
	_, err := s.job.rt.cli.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
	switch {
	case err == nil:
		s.job.log.Info("service thawed", "service", s.name, "container", shortID(id))
		return nil
	case cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err):
		return nil // gone, or not paused
	case !paused:
		// Unpaused on the off chance (a recovered job): whatever the
		// daemon says of a container that was not paused is no failure.
		s.job.log.Debug("unpausing a container not known to be paused", "service", s.name, "err", err)
		return nil
	default:
		return fmt.Errorf("unpausing the container of service %s: %w", s.name, err)
	}
}

// killPaused kills a paused service's container and unpauses it so that
// the kill lands; it reports whether the container was paused.
func (s *service) killPaused(id string) bool {
	s.mu.Lock()
	paused := s.paused
	s.mu.Unlock()
	if !paused {
		return false
	}
	ctx := s.job.rt.ctx
	if _, err := s.job.rt.cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "SIGKILL"}); err != nil &&
		!cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) && !errors.Is(err, context.Canceled) {
		s.job.log.Warn("killing a paused container", "service", s.name, "err", err)
	}
	if err := s.unpause(ctx); err != nil {
		s.job.log.Warn("unpausing a killed container", "service", s.name, "err", err)
	}
	return true
}
