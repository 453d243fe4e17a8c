package jobs

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/notify"
)

// wakeTimeout bounds one signal of the queues waiting to be woken.
const wakeTimeout = 10 * time.Second

// scheduleNew has the submitting transaction enqueue the scheduling work
// of job j, just inserted: last, once per queue (see
// database.Tx.BeforeCommit), since every writer of the queue shares the
// row of its pass.
func (s *Service) scheduleNew(tx *database.Tx, j *ent.Job) {
	switch {
	case s.ScheduleQueue != nil:
		tx.BeforeCommit("schedule queue "+j.QueueID, func(ctx context.Context) error {
			if err := s.ScheduleQueue(ctx, tx.SQL, j.QueueID); err != nil {
				return fmt.Errorf("enqueueing scheduling of job %s: %w", j.ID, err)
			}
			return nil
		})
	case s.Schedule != nil:
		tx.BeforeCommit("schedule job "+j.ID, func(ctx context.Context) error {
			if err := s.Schedule(ctx, tx.SQL, j.ID); err != nil {
				return fmt.Errorf("enqueueing scheduling of job %s: %w", j.ID, err)
			}
			return nil
		})
	}
}

// wakes merges the signals of concurrent submissions: each one costs a
// round trip (pg_notify) and wakes the queue's scheduler for a pass, while
// one signal sent after all of them committed tells the same thing.
type wakes struct {
	mu      sync.Mutex
	waiting map[string]bool // queues committed to since the last signal began
	sending bool            // a goroutine is signalling; it sends waiting before it stops
}

// wakeQueue signals queueID's scheduler once the caller's submission has
// committed, without waiting for the signal: if a signal is being sent,
// the queue waits for the next one, which the sender starts after this
// one (so after the commit). A lost signal only delays: the submission's
// River job schedules the queue anyway.
func (s *Service) wakeQueue(queueID string) {
	if s.Bus == nil {
		return
	}
	w := &s.wakes
	w.mu.Lock()
	if w.waiting == nil {
		w.waiting = map[string]bool{}
	}
	w.waiting[queueID] = true
	if w.sending {
		w.mu.Unlock()
		return
	}
	w.sending = true
	w.mu.Unlock()
	go s.sendWakes()
}

// sendWakes signals the waiting queues until none waits.
func (s *Service) sendWakes() {
	w := &s.wakes
	for {
		w.mu.Lock()
		if len(w.waiting) == 0 {
			w.sending = false
			w.mu.Unlock()
			return
		}
		signals := make([]notify.Signal, 0, len(w.waiting))
		for q := range w.waiting {
			signals = append(signals, notify.Signal{Topic: notify.TopicQueue, Key: q})
		}
		clear(w.waiting)
		w.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), wakeTimeout)
		if err := s.Bus.PublishMany(ctx, signals...); err != nil {
			s.Log.Warn("signalling submitted jobs' queues", "queues", len(signals), "err", err)
		}
		cancel()
	}
}
