package relay

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// activityEvery is how often a job's use is written at most: often enough
// for idle timeouts counted in minutes, rare enough that a busy relay
// writes one row update per job per interval.
const activityEvery = 30 * time.Second

// Activity batches "job used now" marks (relay traffic, terminals) into
// one write per interval. Nothing runs while nothing is used.
type Activity struct {
	// Mark records that jobs were used at at (jobs.Service.MarkActive).
	Mark func(ctx context.Context, ids []string, at time.Time) error
	Now  func() time.Time
	Log  *slog.Logger
	// Every is how often a job's use is written at most, and how often
	// an open terminal or stream marks its job (activityEvery when 0).
	Every time.Duration

	mu      sync.Mutex
	pending map[string]bool
	timer   *time.Timer
	last    map[string]time.Time // when each job was last written
}

// Touch marks job id as used now. Cheap: a map insert, a write at most
// once per activityEvery per job.
func (a *Activity) Touch(id string) {
	if a == nil || a.Mark == nil {
		return
	}
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if at, ok := a.last[id]; ok && now.Sub(at) < a.every() {
		return
	}
	if a.last == nil {
		a.last, a.pending = map[string]time.Time{}, map[string]bool{}
	}
	a.last[id] = now
	a.pending[id] = true
	if a.timer == nil {
		// The first mark is written at once, so an idle job that is used
		// again is seen at once; the next within the interval wait.
		a.timer = time.AfterFunc(0, a.flush)
	}
}

func (a *Activity) every() time.Duration {
	if a == nil || a.Every <= 0 {
		return activityEvery
	}
	return a.Every
}

func (a *Activity) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// flush writes the pending marks.
func (a *Activity) flush() {
	a.mu.Lock()
	ids := make([]string, 0, len(a.pending))
	for id := range a.pending {
		ids = append(ids, id)
	}
	clear(a.pending)
	now := a.now()
	for id, at := range a.last {
		if now.Sub(at) >= a.every() {
			delete(a.last, id)
		}
	}
	a.timer = nil
	a.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Mark(ctx, ids, now); err != nil && a.Log != nil {
		a.Log.Warn("recording relay activity", "jobs", len(ids), "err", err)
	}
}
