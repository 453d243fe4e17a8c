package functions

import (
	"context"
	"fmt"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/container"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
)

// maxBackoff caps the wait before a retry.
const maxBackoff = time.Minute

// backoff is the wait before attempt+1: 1 s, 2 s, 4 s, … up to a minute.
func backoff(attempt int) time.Duration {
	d := time.Second << min(max(attempt-1, 0), 6)
	return min(d, maxBackoff)
}

// settle records the outcomes a runner reports. An outcome for a call
// that is no longer this container's running attempt (cancelled, timed
// out, handed elsewhere) is dropped: the call has moved on.
func (s *Service) settle(ctx context.Context, r *Runner, done []Outcome) error {
	sys := viewer.SystemContext(ctx)
	// Results are checked before the transaction: a blob is looked up in
	// the database, which on SQLite has one connection, held by the
	// transaction.
	for i, o := range done {
		if o.Result == nil {
			continue
		}
		if err := s.checkPayload(r.Context(ctx), "result", *o.Result); err != nil {
			done[i].Result, done[i].Failure = nil, &Failure{Kind: KindException, Message: "the result could not be stored: " + err.Error()}
		}
	}
	dead, err := s.deadLetters(sys, []string{r.FunctionID})
	if err != nil {
		return err
	}
	var ended []*ent.Task
	retried := false
	err = s.DB.InTx(sys, func(tx *database.Tx) error {
		ended, retried = nil, false
		ids := make([]string, 0, len(done))
		for _, o := range done {
			ids = append(ids, o.TaskID)
		}
		ts, err := tx.Ent.Task.Query().Where(task.IDIn(ids...), task.FunctionID(r.FunctionID),
			task.ContainerID(r.ContainerID), task.StateEQ(task.StateRUNNING)).All(sys)
		if err != nil {
			return fmt.Errorf("reading calls of container %s: %w", r.ContainerID, err)
		}
		byID := make(map[string]*ent.Task, len(ts))
		for _, t := range ts {
			byID[t.ID] = t
		}
		now := s.now()
		counts := map[string]*[2]int{} // map → succeeded, failed
		count := func(t *ent.Task, k int) {
			if t.MapID == "" {
				return
			}
			if counts[t.MapID] == nil {
				counts[t.MapID] = &[2]int{}
			}
			counts[t.MapID][k]++
		}
		var results []completion
		for _, o := range done {
			t := byID[o.TaskID]
			if t == nil || t.Attempt != o.Attempt {
				continue
			}
			started := s.within(o.StartedAt, t.CreatedAt, now)
			if started.IsZero() && t.StartedAt != nil {
				started = *t.StartedAt
			}
			fin := s.within(o.FinishedAt, t.CreatedAt, now)
			if fin.IsZero() {
				fin = now
			}
			if o.Result != nil {
				results = append(results, completion{id: t.ID, attempt: t.Attempt, data: o.Result.Data, blob: o.Result.Blob, started: started, finished: fin})
				continue
			}
			// Only this container's running attempt moves: a call
			// cancelled meanwhile stays cancelled.
			u := tx.Ent.Task.Update().Where(task.ID(t.ID), task.StateEQ(task.StateRUNNING),
				task.Attempt(t.Attempt), task.ContainerID(r.ContainerID)).ClearDeadline().SetStartedAt(started)
			f := o.Failure
			if f == nil {
				f = &Failure{Kind: KindException, Message: "the runner reported neither a result nor an error"}
			}
			again := failAttempt(u.Mutation(), t, *f, fin, now, dead[t.FunctionID])
			n, err := u.Save(sys)
			if err != nil {
				return fmt.Errorf("recording call %s: %w", t.ID, err)
			}
			if n == 1 && again {
				retried = true
			} else if n == 1 {
				ended = append(ended, t)
				count(t, 1)
			}
		}
		if len(results) > 0 {
			moved, err := completeBatch(sys, tx.SQL, s.DB.Dialect, r.ContainerID, results, now)
			if err != nil {
				return err
			}
			for _, c := range results {
				if _, ok := moved[c.id]; ok {
					ended = append(ended, byID[c.id])
					count(byID[c.id], 0)
				}
			}
		}
		if err := tx.Ent.Container.Update().Where(container.ID(r.ContainerID)).SetLastTaskAt(now).Exec(sys); err != nil {
			return fmt.Errorf("recording container %s busy: %w", r.ContainerID, err)
		}
		for id, c := range counts {
			if err := s.countMap(sys, tx.Ent, id, c[0], c[1]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.ended(ctx, ended)
	if retried {
		s.publish(ctx, notify.TopicFunction, r.FunctionID)
	}
	return nil
}

// deadLetters tells which of functions ids keep their failed calls as
// dead letters (task queues): their items end DEAD, to be requeued.
func (s *Service) deadLetters(sys context.Context, ids []string) (map[string]bool, error) {
	qs, err := s.DB.Ent.Function.Query().Where(function.IDIn(ids...), function.KindEQ(function.KindTASK_QUEUE)).IDs(sys)
	if err != nil {
		return nil, fmt.Errorf("reading kinds of functions: %w", err)
	}
	out := make(map[string]bool, len(qs))
	for _, id := range qs {
		out[id] = true
	}
	return out, nil
}

// failAttempt ends the running attempt of t with f: back to the queue
// after a backoff while attempts remain, else the call fails (a task
// queue's item, dead, becomes a dead letter unless it was cancelled). It
// reports whether the call will run again.
func failAttempt(u *ent.TaskMutation, t *ent.Task, f Failure, fin, now time.Time, dead bool) bool {
	u.SetErrorKind(clipTo(f.Kind, 64))
	u.SetErrorMessage(clipTo(f.Message, 4000))
	u.SetErrorTraceback(clipTo(f.Traceback, 64000))
	if len(f.Exception) > 0 && len(f.Exception) <= InlineLimit {
		u.SetErrorException(f.Exception)
	} else {
		u.ClearErrorException()
	}
	if t.Attempt < t.MaxAttempts && f.Kind != KindCancelled {
		u.SetState(task.StatePENDING)
		u.SetNotBefore(now.Add(backoff(t.Attempt)))
		u.ClearContainerID()
		u.ClearDeadline()
		return true
	}
	if dead && f.Kind != KindCancelled {
		u.SetState(task.StateDEAD)
	} else {
		u.SetState(task.StateERROR)
	}
	u.SetFinishedAt(fin)
	return false
}

// within keeps a time a runner reported (its node's clock) between the
// call's creation and now; zero when it reported none.
func (s *Service) within(at, lo, hi time.Time) time.Time {
	if at.IsZero() {
		return at
	}
	if at.Before(lo) {
		return lo
	}
	if at.After(hi) {
		return hi
	}
	return at
}

func clipTo(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
