package jobs

import (
	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/queue"
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
