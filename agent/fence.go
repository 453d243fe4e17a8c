package agent

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"time"

	"github.com/levers9/levers9/agent/runtime"
)

// fence keeps one job from running twice at once. The server may fail or
// requeue a node's jobs, and start another attempt elsewhere, once the
// node has been silent for its TTL plus grace. An agent that cannot reach
// the server for the shorter time the welcome names (FenceAfter) freezes
// its jobs' services first: frozen, not stopped, for the agent cannot
// tell a partition from a server (or database) outage, after which the
// server gives every node its TTL and grace again and wants its jobs to
// go on. When the server is back, its Reconcile decides: the jobs it
// still wants here are thawed, the others are stopped (a frozen job is
// killed at once) and their output sent.
//
// The silence counts from the last heartbeat the server surely read: one
// sent before a ping it answered, or the hello before a welcome; the
// server counts from when it recorded that heartbeat, later.
//
// The fence and its last contact are kept in the state directory (file,
// written at most every quarter of the fence, so the stored contact is
// never later than the true one): an agent restarted while cut off takes
// over the jobs of a runtime whose jobs outlive it (containers) already
// fenced, not only after its first welcome.
type fence struct {
	mu     sync.Mutex
	after  time.Duration // from the latest welcome; 0: never freeze
	last   time.Time     // the last contact (a hello or heartbeat's sending)
	frozen bool          // the deadline passed: jobs freeze until a Reconcile
	wake   chan struct{}
	file   string    // where it is kept; "": nowhere
	saved  fenceFile // what file holds
}

// fenceFile is the fence as kept in the state directory.
type fenceFile struct {
	AfterMs     int64     `json:"afterMs"`
	LastContact time.Time `json:"lastContact"`
}

// FenceFile is the file in the state directory that keeps the fence.
const FenceFile = "fence.json"

// newFence returns a fence kept in file ("": nowhere), as file has it.
func newFence(file string) *fence {
	f := &fence{wake: make(chan struct{}, 1), file: file}
	if file == "" {
		return f
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return f
	}
	var ff fenceFile
	if json.Unmarshal(b, &ff) != nil || ff.AfterMs <= 0 || ff.LastContact.IsZero() {
		return f
	}
	// Wall-clock time: the agent's monotonic clock began with it.
	f.after, f.last, f.saved = time.Duration(ff.AfterMs)*time.Millisecond, ff.LastContact, ff
	return f
}

// saveLocked keeps the fence in its file when it changed, or its last
// contact moved on by a quarter of the fence; f.mu is held.
func (f *fence) saveLocked() {
	if f.file == "" || f.after <= 0 {
		return
	}
	ff := fenceFile{AfterMs: f.after.Milliseconds(), LastContact: f.last.Round(0)}
	if ff.AfterMs == f.saved.AfterMs && ff.LastContact.Sub(f.saved.LastContact) < f.after/4 {
		return
	}
	b, _ := json.Marshal(ff)
	tmp := f.file + ".tmp"
	if os.WriteFile(tmp, b, 0o600) != nil || os.Rename(tmp, f.file) != nil {
		_ = os.Remove(tmp)
		return
	}
	f.saved = ff
}

func (f *fence) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// welcome records a welcome naming after, answering a hello sent at sent.
func (f *fence) welcome(after time.Duration, sent time.Time) {
	f.mu.Lock()
	f.after = max(after, 0)
	if sent.After(f.last) {
		f.last = sent
	}
	f.saveLocked()
	f.mu.Unlock()
	f.poke()
}

// heard records a heartbeat sent at sent that the server read.
func (f *fence) heard(sent time.Time) {
	f.mu.Lock()
	if sent.After(f.last) {
		f.last = sent
	}
	f.saveLocked()
	f.mu.Unlock()
	f.poke()
}

func (f *fence) isFrozen() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.frozen
}

// due reports whether the deadline passed (and marks the fence frozen
// then, reporting true once), else how long until it does (0: none).
func (f *fence) due(now time.Time) (bool, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.frozen || f.after <= 0 || f.last.IsZero() {
		return false, 0
	}
	left := f.last.Add(f.after).Sub(now)
	if left > 0 {
		return false, left
	}
	f.frozen = true
	return true, 0
}

// lift ends a freeze: the server's Reconcile has said which jobs go on.
func (f *fence) lift() {
	f.mu.Lock()
	f.frozen = false
	f.mu.Unlock()
	f.poke()
}

// fencing freezes every job once the server has been out of reach past
// the fence's deadline; it runs until ctx ends, across sessions.
func (a *Agent) fencing(ctx context.Context) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		froze, left := a.fence.due(time.Now())
		if froze {
			a.freezeAll(ctx)
			continue
		}
		var timer <-chan time.Time
		if left > 0 {
			t.Reset(left)
			timer = t.C
		}
		select {
		case <-ctx.Done():
			return
		case <-a.fence.wake:
		case <-timer:
		}
	}
}

// freezeAll freezes the services of every job the agent runs.
func (a *Agent) freezeAll(ctx context.Context) {
	a.tasks.mu.Lock()
	ts := make(map[string]*task, len(a.tasks.m))
	for id, t := range a.tasks.m {
		ts[id] = t
	}
	a.tasks.mu.Unlock()
	a.fence.mu.Lock()
	after := a.fence.after
	a.fence.mu.Unlock()
	if len(ts) > 0 {
		a.log.Warn("the server has been out of reach too long: freezing every job until it answers, so that no other attempt of them runs beside them",
			"after", after, "jobs", len(ts))
	}
	for id, t := range ts {
		a.freezeTask(ctx, id, t)
	}
}

// freezeTask freezes t's services, unless it has ended or is frozen.
func (a *Agent) freezeTask(ctx context.Context, id string, t *task) {
	t.mu.Lock()
	job, ended, frozen := t.job, t.ended, t.frozen
	if job != nil && !ended && !frozen {
		t.frozen = true
	}
	t.mu.Unlock()
	if job == nil || ended || frozen {
		return // not started yet: launch freezes it as it starts
	}
	fz, ok := job.(runtime.Freezer)
	if !ok {
		a.log.Warn("this job cannot be frozen; it goes on", "job", id)
		return
	}
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := fz.Freeze(fctx); err != nil {
		a.log.Error("freezing a job", "job", id, "err", err)
		return
	}
	a.log.Info("job frozen", "job", id, "attempt", t.attempt)
}

// thawTask lets a frozen job go on: the server still wants it.
func (a *Agent) thawTask(id string, t *task) {
	t.mu.Lock()
	job, frozen := t.job, t.frozen
	t.frozen = false
	t.mu.Unlock()
	if !frozen || job == nil {
		return
	}
	fz, ok := job.(runtime.Freezer)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := fz.Thaw(ctx); err != nil {
		a.log.Error("thawing a job", "job", id, "err", err)
		return
	}
	a.log.Info("job thawed: the server still wants it", "job", id, "attempt", t.attempt)
}
