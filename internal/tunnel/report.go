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

// report is state change m as the job state machine takes it.
func (s *session) report(m wire.StateChange) jobs.Report {
	r := jobs.Report{Ref: s.ref(m.JobID, m.Attempt, m.Service), At: s.srv.now()}
	switch m.State {
	case wire.StateStarting:
		r.Kind = jobs.ReportStarting
	case wire.StateRunning:
		r.Kind = jobs.ReportRunning
		for _, p := range m.Ports {
			r.Ports = append(r.Ports, jobspec.Port{Name: p.Name, Port: p.Port})
		}
	default:
		r.Kind = jobs.ReportEnded
		r.End = jobs.ServiceEnd{ExitCode: m.ExitCode, Failed: m.State == wire.StateFailed, Reason: m.Reason}
	}
	return r
}

// applyReports hands state changes (in the order sent) to the job state
// machine in one transaction, then acknowledges them. Reports about a
// service this node does not run for the job's current attempt are logged
// and ignored there: a late report of attempt 1 never changes attempt 2.
// Nothing is acknowledged unless all are applied.
func (s *session) applyReports(ctx context.Context, batch []inbound) error {
	reports := make([]jobs.Report, len(batch))
	for i, in := range batch {
		reports[i] = s.report(in.m.(wire.StateChange))
	}
	done, err := s.srv.Jobs.ApplyReports(ctx, reports)
	if err != nil {
		return err
	}
	for _, id := range done {
		s.markActive(id, false)
	}
	// An ack covers every message up to it (the agent's outbox drops
	// all of them): the highest says all.
	var last uint64
	for _, in := range batch {
		last = max(last, in.seq)
	}
	return s.ack(ctx, last)
}
