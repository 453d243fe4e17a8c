package functions

import (
	"context"
	"fmt"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/container"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/internal/autoscaling"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
)

// MaxClaim is the most calls one claim hands out.
const MaxClaim = 256

// Outcome is how one claimed call ended, as the runner reports it.
type Outcome struct {
	TaskID                string
	Attempt               int
	Result                *Payload
	Failure               *Failure
	StartedAt, FinishedAt time.Time
}

// Phases are the start phases a runner reports (zero: not reported).
type Phases struct{ CodeFetchedAt, ImageReadyAt, ProcessStartedAt, ImportedAt time.Time }

// ClaimRequest reports finished calls and asks for up to Max more,
// waiting up to Wait for one.
type ClaimRequest struct {
	Max    int
	Wait   time.Duration
	Done   []Outcome
	Phases Phases
}

// Claimed is a call handed to a runner.
type Claimed struct {
	ID             string
	Attempt        int
	Args           Payload
	TimeoutSeconds int
	// Source says what made the call: an HTTP call's args are the JSON
	// request envelope, a cron tick's are empty, others are pickles.
	Source task.Source
}

// Claim records the calls a runner finished, then hands it up to Max
// calls of its function, waiting (woken by new calls, never polling) up
// to Wait for one. exit tells the runner to leave: its app stopped, its
// container is being stopped, or it stayed idle through the scale-down
// window while the function has more containers than its floor.
func (s *Service) Claim(ctx context.Context, r *Runner, req ClaimRequest) ([]Claimed, bool, error) {
	if len(req.Done) > 0 {
		if err := s.settle(ctx, r, req.Done); err != nil {
			return nil, false, err
		}
	}
	if err := s.runnerPhases(ctx, r, req.Phases); err != nil {
		return nil, false, err
	}
	var sig <-chan struct{}
	if s.Bus != nil && req.Wait > 0 {
		ch, stop := s.Bus.Subscribe(notify.TopicFunction, r.FunctionID)
		defer stop()
		sig = ch
	}
	most := min(max(req.Max, 0), MaxClaim)
	// The long poll ends on a real timer; retry and idle times are read
	// on the service's clock.
	var over <-chan time.Time
	if req.Wait > 0 {
		t := time.NewTimer(capWait(req.Wait))
		defer t.Stop()
		over = t.C
	}
	sys := viewer.SystemContext(ctx)
	for {
		ctr, err := s.DB.Ent.Container.Query().Where(container.ID(r.ContainerID)).WithFunction(func(q *ent.FunctionQuery) { q.WithApp() }).Only(sys)
		if err != nil {
			return nil, false, fmt.Errorf("reading container %s: %w", r.ContainerID, err)
		}
		f := ctr.Edges.Function
		if ctr.State == container.StateSTOPPING || ctr.State == container.StateSTOPPED || !serving(f) {
			return nil, true, nil
		}
		if most == 0 {
			return nil, false, nil
		}
		got, next, err := s.take(ctx, ctr, f, most)
		if err != nil || len(got) > 0 {
			return got, false, err
		}
		now := s.now()
		idle, err := s.mayLeave(sys, ctr, f, now)
		if err != nil {
			return nil, false, err
		}
		if idle.IsZero() {
			s.Log.Info("container scaled down", "container", ctr.ID, "function", f.ID)
			return nil, true, nil
		}
		if over == nil {
			return nil, false, nil
		}
		wake := idle
		if next != nil && next.Before(wake) {
			wake = *next
		}
		t := time.NewTimer(max(wake.Sub(now), time.Millisecond))
		select {
		case <-sig:
		case <-t.C:
		case <-over:
			t.Stop()
			return nil, false, nil
		case <-ctx.Done():
			t.Stop()
			return nil, false, nil
		}
		t.Stop()
	}
}

// take hands up to n pending calls of f to container ctr, oldest first;
// with none, it returns when the next retry becomes due.
func (s *Service) take(ctx context.Context, ctr *ent.Container, f *ent.Function, n int) ([]Claimed, *time.Time, error) {
	sys := viewer.SystemContext(ctx)
	var out []Claimed
	var next *time.Time
	err := s.DB.InTx(sys, func(tx *database.Tx) error {
		now := s.now()
		q := tx.Ent.Task.Query().
			Where(task.FunctionID(f.ID), task.StateEQ(task.StatePENDING), task.Or(task.NotBeforeIsNil(), task.NotBeforeLTE(now))).
			Order(ent.Asc(task.FieldCreatedAt), ent.Asc(task.FieldMapIndex)).Limit(n)
		if s.DB.Dialect == dialect.Postgres {
			// Two runners never take the same call: rows another claim
			// holds are skipped, not waited for.
			q = q.ForUpdate(entsql.WithLockAction(entsql.SkipLocked))
		}
		ts, err := q.All(sys)
		if err != nil {
			return fmt.Errorf("reading calls of %s: %w", f.ID, err)
		}
		if len(ts) == 0 {
			t, err := tx.Ent.Task.Query().
				Where(task.FunctionID(f.ID), task.StateEQ(task.StatePENDING), task.NotBeforeGT(now)).
				Order(ent.Asc(task.FieldNotBefore)).First(sys)
			if err == nil {
				next = t.NotBefore
			} else if !ent.IsNotFound(err) {
				return fmt.Errorf("reading retries of %s: %w", f.ID, err)
			}
			return nil
		}
		// A claimed call may wait in the runner behind the others of its
		// batch: the backstop deadline allows for that.
		c := max(f.Concurrency, 1)
		deadline := now.Add(time.Duration(f.TimeoutSeconds*(1+(len(ts)+c-1)/c))*time.Second + 30*time.Second)
		var cold, warm []string
		for _, t := range ts {
			// Calls that came before the container waited for its start:
			// they carry its phases. Calls a ready container takes paid
			// for none.
			if ctr.CreatedAt.After(t.CreatedAt) || ctr.CreatedAt.Equal(t.CreatedAt) {
				cold = append(cold, t.ID)
			} else {
				warm = append(warm, t.ID)
			}
		}
		update := func(ids []string) *ent.TaskUpdate {
			return tx.Ent.Task.Update().Where(task.IDIn(ids...), task.StateEQ(task.StatePENDING)).
				SetState(task.StateRUNNING).AddAttempt(1).SetContainerID(ctr.ID).SetDeadline(deadline).
				SetStartedAt(now).ClearFinishedAt()
		}
		if len(warm) > 0 {
			if err := update(warm).Exec(sys); err != nil {
				return fmt.Errorf("handing calls to %s: %w", ctr.ID, err)
			}
		}
		if len(cold) > 0 {
			if err := update(cold).
				SetNillableScheduledAt(ctr.ScheduledAt).SetNillableImageReadyAt(ctr.ImageReadyAt).
				SetNillableCodeFetchedAt(ctr.CodeFetchedAt).SetNillableProcessStartedAt(ctr.ProcessStartedAt).
				SetNillableImportedAt(ctr.ImportedAt).Exec(sys); err != nil {
				return fmt.Errorf("handing calls to %s: %w", ctr.ID, err)
			}
		}
		if err := tx.Ent.Container.UpdateOneID(ctr.ID).SetLastTaskAt(now).SetState(container.StateREADY).Exec(sys); err != nil {
			return fmt.Errorf("marking container %s busy: %w", ctr.ID, err)
		}
		for _, t := range ts {
			out = append(out, Claimed{
				ID: t.ID, Attempt: t.Attempt + 1, TimeoutSeconds: t.TimeoutSeconds,
				Args: Payload{Data: t.Args, Blob: t.ArgsBlob}, Source: t.Source,
			})
		}
		return nil
	})
	return out, next, err
}

// mayLeave returns when idle container ctr may leave (zero: now), or a
// time past any wait when it must stay.
func (s *Service) mayLeave(sys context.Context, ctr *ent.Container, f *ent.Function, now time.Time) (time.Time, error) {
	never := now.Add(24 * time.Hour)
	since := ctr.CreatedAt
	if ctr.LastTaskAt != nil {
		since = *ctr.LastTaskAt
	}
	busy, err := s.DB.Ent.Task.Query().Where(task.ContainerID(ctr.ID), task.StateEQ(task.StateRUNNING)).Exist(sys)
	if err != nil || busy {
		return never, err
	}
	at := since.Add(time.Duration(f.ScaledownWindowSeconds) * time.Second)
	if now.Before(at) {
		return at, nil
	}
	in, err := s.counts(sys, f)
	if err != nil {
		return never, err
	}
	if !autoscaling.MayStop(in) {
		return never, nil
	}
	n, err := s.DB.Ent.Container.Update().Where(container.ID(ctr.ID), container.StateIn(live...)).
		SetState(container.StateSTOPPING).SetStopReason("idle for " + time.Duration(f.ScaledownWindowSeconds*int(time.Second)).String()).
		Save(sys)
	if err != nil || n == 0 {
		return never, err
	}
	return time.Time{}, nil
}

// runnerPhases records the phases a runner reports once, and that the
// container is ready.
func (s *Service) runnerPhases(ctx context.Context, r *Runner, p Phases) error {
	if p.ProcessStartedAt.IsZero() && p.ImportedAt.IsZero() {
		return nil
	}
	sys := viewer.SystemContext(ctx)
	u := s.DB.Ent.Container.Update().Where(container.ID(r.ContainerID), container.ProcessStartedAtIsNil())
	if !p.ProcessStartedAt.IsZero() {
		u.SetProcessStartedAt(s.sane(p.ProcessStartedAt))
	}
	if !p.ImportedAt.IsZero() {
		u.SetImportedAt(s.sane(p.ImportedAt))
	}
	if err := u.Exec(sys); err != nil {
		return fmt.Errorf("recording phases of container %s: %w", r.ContainerID, err)
	}
	n, err := s.DB.Ent.Container.Update().Where(container.ID(r.ContainerID), container.StateEQ(container.StateSTARTING)).
		SetState(container.StateREADY).Save(sys)
	if err != nil {
		return fmt.Errorf("marking container %s ready: %w", r.ContainerID, err)
	}
	if n > 0 {
		// Whoever waits for a ready container (a WebSocket) looks again.
		s.publish(ctx, notify.TopicFunction, r.FunctionID)
	}
	return nil
}
