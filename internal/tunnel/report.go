package tunnel

import (
	"context"

	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/wire"
)

// ref names the service m reports on, as run by this node.
func (s *session) ref(jobID string, attempt int, name string) jobs.ServiceRef {
	return jobs.ServiceRef{JobID: jobID, Service: name, NodeID: s.nodeID, Attempt: attempt}
}

// stateChange hands a service's new state to the job state machine. Reports
// about a service this node does not run for the job's current attempt are
// logged and ignored there: a late report of attempt 1 never changes
// attempt 2.
func (s *session) stateChange(ctx context.Context, m wire.StateChange) error {
	ref := s.ref(m.JobID, m.Attempt, m.Service)
	switch m.State {
	case wire.StateStarting:
		_, err := s.srv.Jobs.OwnService(ctx, ref)
		return err
	case wire.StateRunning:
		var ports []jobspec.Port
		for _, p := range m.Ports {
			ports = append(ports, jobspec.Port{Name: p.Name, Port: p.Port})
		}
		return s.srv.Jobs.ServiceRunning(ctx, ref, ports, s.srv.now())
	}
	end := jobs.ServiceEnd{ExitCode: m.ExitCode, Failed: m.State == wire.StateFailed, Reason: m.Reason}
	done, err := s.srv.Jobs.ServiceEnded(ctx, ref, end, s.srv.now())
	if done {
		s.markActive(m.JobID, false)
	}
	return err
}
