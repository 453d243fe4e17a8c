package functions

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/internal/audit"
	"github.com/levers9/levers9/internal/viewer"
)

// Cron ticks.
const (
	// MissedTickAfter: a tick found this long after its time is a missed
	// one (the server was down or the pass stalled): it is not run late,
	// and the schedule moves to the next tick after now.
	MissedTickAfter = time.Minute
	// fireBatch bounds the functions one pass reads.
	fireBatch = 500
	// ActionCronSkip is the audit action of a tick skipped because the
	// previous run was still going.
	ActionCronSkip = "cron.skip"
)

// FireSchedules runs every due tick of the serving CRON functions and
// returns how many tasks it started. A compare-and-set on next_run_at
// decides which caller handles a tick, so passes running at once (two
// replicas) never both fire it, and the schedule jumps to the first tick
// after now, so ticks missed while no server ran are not replayed. A tick
// that finds the previous run pending or running is skipped and recorded
// (skipped_runs, audit "cron.skip"). Only the live version of an app
// fires: an older version still serving calls does not run its schedule
// twice.
func (s *Service) FireSchedules(ctx context.Context) (int, error) {
	sys := viewer.SystemContext(ctx)
	now := s.now()
	due, err := s.DB.Ent.Function.Query().
		Where(function.KindEQ(function.KindCRON), function.NextRunAtNotNil(), function.NextRunAtLTE(now), servingFunction()).
		WithApp().Order(ent.Asc(function.FieldNextRunAt)).Limit(fireBatch).All(sys)
	if err != nil {
		return 0, fmt.Errorf("reading due schedules: %w", err)
	}
	fired := 0
	var errs []error
	for _, f := range due {
		ran, err := s.fireSchedule(ctx, f, now)
		if err != nil {
			errs = append(errs, fmt.Errorf("cron of function %s: %w", f.ID, err))
		}
		if ran {
			fired++
		}
	}
	return fired, errors.Join(errs...)
}

// fireSchedule handles the due tick of function f (its app loaded) at
// now, reporting whether it started a task.
func (s *Service) fireSchedule(ctx context.Context, f *ent.Function, now time.Time) (bool, error) {
	sys := viewer.SystemContext(ctx)
	tick := *f.NextRunAt
	claim := s.DB.Ent.Function.Update().Where(function.ID(f.ID), function.NextRunAtEQ(tick))
	sched, err := ParseCron(f.Cron)
	var next time.Time
	if err == nil {
		next = sched.Next(now.UTC())
	}
	if next.IsZero() {
		// Deploy checks expressions: this is an old row or a schedule
		// with no more ticks. Stop looking at it.
		claim.ClearNextRunAt()
	} else {
		claim.SetNextRunAt(next)
	}
	n, err := claim.Save(sys)
	if err != nil {
		return false, fmt.Errorf("claiming tick %s: %w", tick.Format(time.RFC3339), err)
	}
	if n == 0 {
		return false, nil // another pass took this tick
	}
	log := s.Log.With("function", f.ID, "tick", tick.UTC().Format(time.RFC3339))
	switch {
	case f.Edges.App != nil && f.Version != f.Edges.App.LiveVersion:
		return false, nil // an older version: its schedule is the live one's
	case now.Sub(tick) > MissedTickAfter:
		log.Info("cron tick missed: not run late", "late", now.Sub(tick).Round(time.Second).String(), "next", next)
		return false, nil
	}
	if f.LastRunTaskID != "" {
		prev, err := s.DB.Ent.Task.Query().Where(task.ID(f.LastRunTaskID)).Only(sys)
		if err != nil && !ent.IsNotFound(err) {
			return false, fmt.Errorf("reading the previous run %s: %w", f.LastRunTaskID, err)
		}
		if prev != nil && (prev.State == task.StatePENDING || prev.State == task.StateRUNNING) {
			return false, s.skipTick(ctx, f, tick, prev)
		}
	}
	owner := viewer.NewContext(ctx, &viewer.Viewer{UserID: f.OwnerID, TenantID: f.TenantID, EnvironmentID: f.EnvironmentID})
	t, err := s.CallWith(owner, f.ID, Payload{}, CallOptions{Source: task.SourceCRON})
	if err != nil {
		return false, fmt.Errorf("running tick %s: %w", tick.Format(time.RFC3339), err)
	}
	if err := s.DB.Ent.Function.UpdateOneID(f.ID).SetLastRunAt(tick).SetLastRunTaskID(t.ID).Exec(sys); err != nil {
		return true, fmt.Errorf("recording the run of tick %s: %w", tick.Format(time.RFC3339), err)
	}
	log.Info("cron tick fired", "task", t.ID)
	return true, nil
}

// skipTick records that tick of f did not run because prev still does.
func (s *Service) skipTick(ctx context.Context, f *ent.Function, tick time.Time, prev *ent.Task) error {
	sys := viewer.SystemContext(ctx)
	if err := s.DB.Ent.Function.UpdateOneID(f.ID).AddSkippedRuns(1).SetLastRunAt(tick).Exec(sys); err != nil {
		return fmt.Errorf("recording a skipped tick: %w", err)
	}
	s.Log.Info("cron tick skipped: the previous run is still going", "function", f.ID, "tick", tick.UTC().Format(time.RFC3339), "running", prev.ID)
	return audit.Record(ctx, s.DB.Ent, f.TenantID, f.OwnerID, ActionCronSkip, f.ID, map[string]string{
		"function": f.Name, "version": strconv.Itoa(f.Version), "tick": tick.UTC().Format(time.RFC3339),
		"running": prev.ID, "state": string(prev.State),
	})
}
