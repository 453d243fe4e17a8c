package functions

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/functionmap"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/internal/viewer"
)

// refreshMaps recounts the ended items of maps from their tasks (one
// grouped query each), so the counters never drift from the items
// whichever way they ended, and stamps a map finished when all are.
func (s *Service) refreshMaps(ctx context.Context, c *ent.Client, ids []string) error {
	sys := viewer.SystemContext(ctx)
	for _, id := range ids {
		var rows []struct {
			State task.State `json:"state"`
			Count int        `json:"count"`
		}
		if err := c.Task.Query().Where(task.MapID(id), task.StateIn(endedStates...)).
			GroupBy(task.FieldState).Aggregate(ent.Count()).Scan(sys, &rows); err != nil {
			return fmt.Errorf("counting items of map %s: %w", id, err)
		}
		ok, failed := 0, 0
		for _, r := range rows {
			if r.State == task.StateCOMPLETE {
				ok += r.Count
			} else {
				failed += r.Count
			}
		}
		m, err := c.FunctionMap.Get(sys, id)
		if err != nil {
			return fmt.Errorf("reading map %s: %w", id, err)
		}
		u := c.FunctionMap.Update().Where(functionmap.ID(id)).SetSucceeded(ok).SetFailed(failed)
		if ok+failed >= m.Total && m.FinishedAt == nil {
			u.SetFinishedAt(s.now())
		}
		if err := u.Exec(sys); err != nil {
			return fmt.Errorf("counting items of map %s: %w", id, err)
		}
	}
	return nil
}

// mapsOf lists the maps tasks belong to, once each.
func mapsOf(ts []*ent.Task) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range ts {
		if t.MapID != "" && !seen[t.MapID] {
			seen[t.MapID] = true
			out = append(out, t.MapID)
		}
	}
	return out
}

// countMap adds calls that just ended to map id's counters, inside the
// transaction that ended them, and stamps it finished when all have.
func (s *Service) countMap(sys context.Context, c *ent.Client, id string, ok, failed int) error {
	if err := c.FunctionMap.Update().Where(functionmap.ID(id)).AddSucceeded(ok).AddFailed(failed).Exec(sys); err != nil {
		return fmt.Errorf("counting items of map %s: %w", id, err)
	}
	m, err := c.FunctionMap.Get(sys, id)
	if err != nil {
		return fmt.Errorf("reading map %s: %w", id, err)
	}
	if m.FinishedAt == nil && m.Succeeded+m.Failed >= m.Total {
		return c.FunctionMap.Update().Where(functionmap.ID(id), functionmap.FinishedAtIsNil()).SetFinishedAt(s.now()).Exec(sys)
	}
	return nil
}
