package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/jobspec"
)

// ReportKind is what a node's agent reports about a service.
type ReportKind int

// The reports ApplyReports takes.
const (
	ReportStarting ReportKind = iota // the service is starting: changes no row
	ReportRunning                    // the service runs (Ports)
	ReportEnded                      // the service ended (End)
)

// Report is one state report of a node's agent, as ApplyReports applies it.
type Report struct {
	Ref   ServiceRef
	Kind  ReportKind
	Ports []jobspec.Port // ReportRunning
	End   ServiceEnd     // ReportEnded
	At    time.Time
}

// ApplyReports applies reports in order in one transaction: what
// OwnService, ServiceRunning and ServiceEnded do one by one, with every
// rule of theirs (a late report of an old attempt is ignored, a job settles
// when its last service ends), but one commit for a whole batch the tunnel
// read loop had queued: on SQLite's single connection that commit, not the
// statements, is most of a report's cost. Done are the jobs over on the
// reporting node (as ServiceEnded's done). Changed jobs are signalled after
// the commit, once each, with what the transaction read of them. On error
// nothing is applied.
func (s *Service) ApplyReports(ctx context.Context, reports []Report) (done []string, err error) {
	var changed []jobChange
	err = s.DB.InTx(ctx, func(tx *database.Tx) error {
		done, changed = done[:0], changed[:0] // a transaction may run again
		for _, r := range reports {
			var over bool
			var moved *jobChange
			var err error
			switch r.Kind {
			case ReportStarting:
				// Nothing to record, and nothing to check: the service's
				// running or end report is checked (and a stranger's
				// logged) when it comes.
			case ReportRunning:
				moved, err = s.serviceRunning(ctx, tx, r.Ref, r.Ports, r.At)
			case ReportEnded:
				over, moved, err = s.serviceEnded(ctx, tx, r.Ref, r.End, r.At)
			default:
				err = fmt.Errorf("unknown report kind %d", r.Kind)
			}
			if err != nil {
				return err
			}
			if over {
				done = append(done, r.Ref.JobID)
			}
			if moved != nil {
				changed = append(changed, *moved)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(changed))
	for _, c := range changed {
		if !seen[c.jobID] {
			seen[c.jobID] = true
			s.signalChange(ctx, c)
		}
	}
	return done, nil
}
