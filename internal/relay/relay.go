// Package relay lets users reach the services of their running jobs
// through the server: HTTP and WebSocket at /relay/JOB/SERVICE/PORT/ (and
// on the relay domain), raw TCP for port-forward and terminals (attach,
// exec) at /streams/. Nodes accept no inbound connections: every byte
// goes through a stream of the node's stream tunnel (internal/tunnel),
// opened by the replica holding it; the others forward to that replica.
package relay

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/tunnel"
	"github.com/levers9/levers9/internal/wire"
)

// Tunnel opens streams to nodes connected to this replica.
type Tunnel interface {
	OpenStream(ctx context.Context, nodeID string, open wire.StreamOpen) (net.Conn, error)
	HoldsStreams(nodeID string) bool
}

// Replicas finds the replica holding a node's stream tunnel.
type Replicas interface {
	StreamReplica(ctx context.Context, nodeID string) (string, error)
}

// Service resolves what a viewer asks to reach and opens streams to it.
type Service struct {
	Jobs   *jobs.Service
	Tunnel Tunnel
	// Replicas and Replica (this replica's internal URL) let a replica
	// that does not hold a node's tunnel forward to the one that does;
	// nil with a single replica.
	Replicas Replicas
	Replica  string
	// Active records use of jobs for the idle stop (batched here).
	Active *Activity
	Log    *slog.Logger
}

// Target is a running service of a job that the viewer may reach.
type Target struct {
	jobs.Reach
	// Port is the host port on the node (TCP and HTTP targets).
	Port int
}

// Resolve finds service svc of job jobID, running, as the viewer in ctx
// may see it, and with port (a port's name, its declared number or its
// host port; "" for terminals) its host port.
func (s *Service) Resolve(ctx context.Context, jobID, svc, port string) (Target, error) {
	r, err := s.Jobs.Reach(ctx, jobID, svc)
	if err != nil {
		return Target{}, err
	}
	t := Target{Reach: r}
	if port != "" {
		if t.Port, err = jobs.HostPort(r.Service, port); err != nil {
			return Target{}, err
		}
	}
	return t, nil
}

// ResolveTerminal is Resolve for a terminal: only the job's owner and
// tenant admins, and never on a batch-only queue (jobs.TerminalRefusal).
func (s *Service) ResolveTerminal(ctx context.Context, jobID, svc string) (Target, error) {
	t, err := s.Resolve(ctx, jobID, svc, "")
	if err != nil {
		return Target{}, err
	}
	if err := s.Jobs.MayOpenTerminal(ctx, t.Job); err != nil {
		return Target{}, err
	}
	return t, nil
}

// Open opens a stream of kind open.Kind to t on this replica (filling in
// the job, attempt, service and port); UNAVAILABLE when this replica does
// not hold the node's tunnel (forward first: see Elsewhere).
func (s *Service) Open(ctx context.Context, t Target, open wire.StreamOpen) (net.Conn, error) {
	open.JobID, open.Attempt, open.Service = t.Job.ID, t.Job.Attempt, t.Service.Name
	if open.Kind == wire.StreamTCP {
		open.Port = t.Port
	}
	c, err := s.Tunnel.OpenStream(ctx, t.Service.NodeID, open)
	if errors.Is(err, tunnel.ErrNotHere) {
		// Elsewhere found no other replica holding it: with one replica,
		// the node is not connected (down, or reconnecting).
		return nil, fault.New(fault.Unavailable, "the node running service %s of job %s is not connected to this server right now (it may be reconnecting); try again", t.Service.Name, t.Job.ID)
	}
	if err != nil {
		return nil, err
	}
	s.Active.Touch(t.Job.ID)
	return c, nil
}

// Elsewhere is the internal URL of the replica to forward a request for t
// to, or "" when this replica serves it (it holds the node's tunnel, or
// no other replica does).
func (s *Service) Elsewhere(ctx context.Context, t Target) (string, error) {
	if s.Tunnel.HoldsStreams(t.Service.NodeID) || s.Replicas == nil {
		return "", nil
	}
	r, err := s.Replicas.StreamReplica(ctx, t.Service.NodeID)
	if err != nil {
		return "", err
	}
	if r == s.Replica {
		return "", nil
	}
	return r, nil
}

// keepActive touches job id while ctx lasts (an attached terminal counts
// as use even when nobody types).
func (s *Service) keepActive(ctx context.Context, id string) {
	if s.Active == nil || s.Active.Mark == nil {
		return
	}
	t := time.NewTicker(s.Active.every())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.Active.Touch(id)
		}
	}
}
