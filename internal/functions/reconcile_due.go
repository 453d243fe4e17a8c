package functions

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent/app"
	"github.com/levers9/levers9/ent/container"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/internal/viewer"
)

// ReconcileDue says whether a Reconcile pass may find anything to do. Each
// of its steps starts from rows that cannot exist otherwise: an abandoned
// ephemeral app and a function to scale belong to an app not stopped, a
// container to reap is not stopped, an overdue call is running. With none,
// the periodic pass is skipped: an idle server pays these reads instead of
// a River job and the pass's own reads.
func (s *Service) ReconcileDue(ctx context.Context) (bool, error) {
	sys := viewer.SystemContext(ctx)
	checks := []struct {
		what  string
		exist func(context.Context) (bool, error)
	}{
		// Every state but STOPPED, named: an index finds "IN", not "<>"
		// (which reads every app and container ever run, each time).
		{"apps", s.DB.Ent.App.Query().Where(app.StateIn(app.StateRUNNING, app.StateDEPLOYED)).Exist},
		{"containers", s.DB.Ent.Container.Query().Where(container.StateIn(container.StateSTARTING, container.StateREADY, container.StateSTOPPING)).Exist},
		{"calls", s.DB.Ent.Task.Query().Where(task.StateEQ(task.StateRUNNING)).Exist},
	}
	for _, c := range checks {
		found, err := c.exist(sys)
		if err != nil {
			return true, fmt.Errorf("looking for live %s: %w", c.what, err)
		}
		if found {
			return true, nil
		}
	}
	return false, nil
}
