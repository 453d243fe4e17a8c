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
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// Runner is a container's identity, established by the agent that runs
// it: the socket the runner connects through is bound to its job, and the
// server trusts a node only for jobs placed on it. It allows the calls of
// its own function and calls within its own app, nothing of its owner's
// or tenant's beyond that.
type Runner struct {
	ContainerID, FunctionID, AppID, JobID, NodeID string
	TenantID, EnvironmentID, OwnerID              string
	Attempt                                       int
	Version                                       int // its function's app version
}

// RunnerFor identifies the runner of a stream node nodeID opened for its
// job, and records the start phases the agent saw.
func (s *Service) RunnerFor(ctx context.Context, nodeID string, open wire.RunnerOpen) (*Runner, error) {
	sys := viewer.SystemContext(ctx)
	j, err := s.DB.Ent.Job.Query().Where(job.ID(open.JobID)).WithServices().Only(sys)
	if ent.IsNotFound(err) {
		return nil, fault.Missing(fmt.Sprintf("job %q", clip(open.JobID)))
	}
	if err != nil {
		return nil, fmt.Errorf("reading job %s: %w", open.JobID, err)
	}
	placed := false
	for _, svc := range j.Edges.Services {
		placed = placed || svc.NodeID == nodeID
	}
	// Another node's job reads as no job at all.
	if !placed {
		return nil, fault.Missing(fmt.Sprintf("job %q", clip(open.JobID)))
	}
	if j.Spec.Runner == nil {
		return nil, fault.New(fault.Forbidden, "job %s is not a function's container", j.ID)
	}
	if jobs.Ended(j.Status) || max(open.Attempt, 1) != j.Attempt {
		return nil, fault.New(fault.NotFound, "job %s attempt %d is not running", j.ID, open.Attempt)
	}
	ctr, err := s.DB.Ent.Container.Query().
		Where(container.ID(j.Spec.Runner.ContainerID), container.JobID(j.ID)).WithFunction().Only(sys)
	if ent.IsNotFound(err) {
		return nil, fault.Missing(fmt.Sprintf("container of job %q", j.ID))
	}
	if err != nil {
		return nil, fmt.Errorf("reading container of job %s: %w", j.ID, err)
	}
	u := s.DB.Ent.Container.UpdateOneID(ctr.ID)
	dirty := false
	for _, p := range []struct {
		have *time.Time
		at   time.Time
		set  func(time.Time) *ent.ContainerUpdateOne
	}{
		{ctr.ScheduledAt, open.ScheduledAt, u.SetScheduledAt},
		{ctr.CodeFetchedAt, open.CodeFetchedAt, u.SetCodeFetchedAt},
		{ctr.ImageReadyAt, open.ImageReadyAt, u.SetImageReadyAt},
	} {
		if p.have == nil && !p.at.IsZero() {
			p.set(s.sane(p.at))
			dirty = true
		}
	}
	if dirty {
		if err := u.Exec(sys); err != nil {
			return nil, fmt.Errorf("recording phases of container %s: %w", ctr.ID, err)
		}
	}
	f := ctr.Edges.Function
	return &Runner{
		ContainerID: ctr.ID, FunctionID: f.ID, AppID: f.AppID, JobID: j.ID, NodeID: nodeID,
		TenantID: ctr.TenantID, EnvironmentID: ctr.EnvironmentID, OwnerID: ctr.OwnerID, Attempt: j.Attempt,
		Version: f.Version,
	}, nil
}

// Context acts as the container: its owner, in its tenant and environment
// (never an admin), so what it reads and writes stays inside them.
func (r *Runner) Context(ctx context.Context) context.Context {
	return viewer.NewContext(ctx, &viewer.Viewer{UserID: r.OwnerID, TenantID: r.TenantID, EnvironmentID: r.EnvironmentID})
}

// Describe is the runner's function.
func (s *Service) Describe(ctx context.Context, r *Runner) (*ent.Function, error) {
	f, err := s.DB.Ent.Function.Query().Where(function.ID(r.FunctionID)).WithApp().Only(r.Context(ctx))
	if err != nil {
		return nil, fmt.Errorf("reading function %s: %w", r.FunctionID, err)
	}
	return f, nil
}

// sane keeps a time reported from a node's clock from lying far ahead.
func (s *Service) sane(at time.Time) time.Time {
	if now := s.now(); at.After(now) {
		return now
	}
	return at
}
