package jobs

import (
	"context"
	"fmt"
	"strings"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/audit"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
)

// TerminalRefusal says why v may not attach to or exec in job j, whose
// queue runs in mode, or nil when it may: a terminal runs commands as the
// job, so only its owner and tenant admins get one, and never on a queue
// that is for batch jobs only.
func TerminalRefusal(v *viewer.Viewer, j *ent.Job, mode queue.Mode) error {
	switch {
	case !owns(v, j):
		return fault.New(fault.Forbidden, "only the job's owner and tenant admins may open a terminal in job %s", j.ID)
	case mode == queue.ModeBatch:
		return fault.New(fault.Forbidden, "the job's queue is for batch jobs only: it allows no terminals")
	}
	return nil
}

// MayOpenTerminal is TerminalRefusal for the viewer in ctx and job j,
// reading j's queue mode: only terminals need it, so relayed requests do
// not pay for it.
func (s *Service) MayOpenTerminal(ctx context.Context, j *ent.Job) error {
	q, err := s.DB.Ent.Queue.Query().Where(queue.ID(j.QueueID)).Select(queue.FieldMode).Only(viewer.SystemContext(ctx))
	if err != nil {
		return fmt.Errorf("finding the queue of job %s: %w", j.ID, err)
	}
	return TerminalRefusal(viewer.FromContext(ctx), j, q.Mode)
}

// TerminalOpened records in the tenant's audit log that the viewer in ctx
// opened a terminal (kind "exec" or "attach", with the command for exec)
// in service svc of job j: a terminal runs commands as the job, so who did
// it is kept.
func (s *Service) TerminalOpened(ctx context.Context, j *ent.Job, svc, kind string, command []string) error {
	v := viewer.FromContext(ctx)
	if v == nil {
		return nil
	}
	details := map[string]string{"service": svc}
	if len(command) > 0 {
		details["command"] = clipCommand(strings.Join(command, " "))
	}
	return audit.Record(ctx, s.DB.Ent, j.TenantID, v.UserID, "job.terminal."+kind, j.ID, details)
}

// clipCommand bounds a command kept in the audit log.
func clipCommand(c string) string {
	const most = 1000
	if len(c) <= most {
		return c
	}
	return strings.ToValidUTF8(c[:most], "") + "…"
}
