package agent

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/wire"
)

// task is a job the agent was given. It is forgotten once it ended and all
// its reports reached the server, so a reconnect still lists it until then
// and the server does not take it for lost.
type task struct {
	job      runtime.Job
	received time.Time
	mu       sync.Mutex
	services map[string]*wire.RunningService
	ended    bool
	stopped  string   // a Stop's reason, when it came before the job started
	mounts   *mounted // nil without mounts
}

// tasks are the agent's jobs.
type tasks struct {
	mu sync.Mutex
	m  map[string]*task
}

// running lists the services of every job not forgotten yet: while a
// job's final reports wait in the outbox it still counts as running here.
func (ts *tasks) running() []wire.RunningService {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var out []wire.RunningService
	for _, t := range ts.m {
		t.mu.Lock()
		for _, rs := range t.services {
			out = append(out, *rs)
		}
		t.mu.Unlock()
	}
	return out
}

// start runs a Start through the runtime and forwards its events.
func (a *Agent) start(ctx context.Context, m wire.Start) {
	a.tasks.mu.Lock()
	if _, ok := a.tasks.m[m.JobID]; ok {
		a.tasks.mu.Unlock()
		return // a resend: keep the running one
	}
	t := &task{received: time.Now(), services: map[string]*wire.RunningService{}}
	for _, s := range m.Services {
		t.services[s.Name] = &wire.RunningService{JobID: m.JobID, Service: s.Name, StartedAt: t.received}
	}
	a.tasks.m[m.JobID] = t
	a.tasks.mu.Unlock()

	if len(m.Mounts) == 0 {
		a.launch(ctx, m, t, runtime.SpecFromStart(m))
		return
	}
	// Syncing buckets down may take long: the tunnel goes on meanwhile.
	go func() {
		spec := runtime.SpecFromStart(m)
		mt, err := a.prepareMounts(ctx, m.JobID, m.Mounts)
		t.mu.Lock()
		t.mounts = mt
		t.mu.Unlock()
		if err != nil {
			a.fail(m, t, fmt.Sprintf("could not prepare its mounts: %v", err))
			return
		}
		spec.Mounts = mt.spec
		a.launch(ctx, m, t, spec)
	}()
}

// launch starts spec through the runtime, unless a Stop came first.
func (a *Agent) launch(ctx context.Context, m wire.Start, t *task, spec runtime.JobSpec) {
	t.mu.Lock()
	stopped := t.stopped
	t.mu.Unlock()
	if stopped != "" {
		a.fail(m, t, stopped)
		return
	}
	job, err := a.cfg.Runtime.Start(ctx, spec)
	if err != nil {
		a.fail(m, t, fmt.Sprintf("could not start: %v", err))
		return
	}
	t.mu.Lock()
	t.job = job
	t.mu.Unlock()
	a.log.Info("job started", "job", m.JobID, "services", len(m.Services))
	go a.forward(m.JobID, t, job)
}

// fail reports every service of a job that never ran as failed.
func (a *Agent) fail(m wire.Start, t *task, reason string) {
	a.log.Warn("job could not start", "job", m.JobID, "reason", reason)
	t.mu.Lock()
	mt := t.mounts
	t.mu.Unlock()
	if err := mt.cleanup(); err != nil {
		a.log.Warn("removing mounts", "job", m.JobID, "err", err)
	}
	now := time.Now()
	for _, s := range m.Services {
		a.out.push(item{jobID: m.JobID, state: &wire.StateChange{
			JobID: m.JobID, Service: s.Name, State: wire.StateFailed,
			Reason: clipReason(reason), Time: now,
		}})
	}
	t.mu.Lock()
	t.ended = true
	t.mu.Unlock()
	a.forgetIfDone(m.JobID)
}

// forward drains a job's events into the outbox, in order. The runtime
// holds back output while Events is full, so this never blocks on the
// network.
func (a *Agent) forward(id string, t *task, job runtime.Job) {
	t.mu.Lock()
	mt := t.mounts
	t.mu.Unlock()
	// With mounts to save, services' ends are held back until the results
	// are in their buckets: the job ends on the server only then, and
	// fails if they could not be saved.
	hold := mt != nil && len(mt.syncs) > 0
	var held []wire.StateChange
	for ev := range job.Events() {
		switch ev := ev.(type) {
		case runtime.StateEvent:
			t.mu.Lock()
			if rs := t.services[ev.Service]; rs != nil {
				switch ev.State {
				case runtime.Running:
					rs.PID, rs.StartedAt = ev.PID, ev.Time
				}
			}
			t.mu.Unlock()
			m := ev.Wire()
			if hold && (ev.State == runtime.Exited || ev.State == runtime.Failed) {
				held = append(held, m)
				continue
			}
			a.out.push(item{jobID: id, state: &m})
		case runtime.LogEvent:
			l := ev.Wire()
			a.out.push(item{jobID: id, line: &l})
		}
	}
	res := job.Wait()
	a.log.Info("job ended", "job", id, "status", res.Status, "reason", res.Reason)
	if hold {
		if err := a.syncBack(context.Background(), id, mt); err != nil {
			// The files stay on the node: nothing is lost, and the
			// reason says where they are.
			a.log.Error("job results not saved", "job", id, "err", err, "kept", mt.root)
			reason := clipReason(fmt.Sprintf("results not saved (kept on the node in %s): %v", mt.root, err))
			for i := range held {
				held[i].State, held[i].Reason = wire.StateFailed, reason
			}
			mt = nil // keep the directory
		}
		for i := range held {
			a.out.push(item{jobID: id, state: &held[i]})
		}
	}
	if err := mt.cleanup(); err != nil {
		a.log.Warn("removing mounts", "job", id, "err", err)
	}
	t.mu.Lock()
	t.ended = true
	t.mu.Unlock()
	a.forgetIfDone(id)
}

// forgetIfDone drops job id once it ended and the server has all its
// reports.
func (a *Agent) forgetIfDone(id string) {
	a.tasks.mu.Lock()
	defer a.tasks.mu.Unlock()
	t := a.tasks.m[id]
	if t == nil {
		return
	}
	t.mu.Lock()
	ended := t.ended
	t.mu.Unlock()
	if ended && !a.out.has(id) {
		delete(a.tasks.m, id)
	}
}

// stop stops job id, if the agent runs it.
func (a *Agent) stop(id, reason string, grace time.Duration) {
	a.tasks.mu.Lock()
	t := a.tasks.m[id]
	a.tasks.mu.Unlock()
	if t == nil {
		return
	}
	t.mu.Lock()
	job := t.job
	if job == nil && t.stopped == "" {
		t.stopped = cmp.Or(reason, "stopped") // still preparing its mounts
	}
	t.mu.Unlock()
	if job != nil {
		a.log.Info("stopping job", "job", id, "reason", reason)
		job.Stop(reason, grace)
	}
}

// reconcile stops every job the server no longer lists as running here.
func (a *Agent) reconcile(m wire.Reconcile) {
	keep := map[string]bool{}
	for _, r := range m.Running {
		keep[r.JobID] = true
	}
	a.tasks.mu.Lock()
	var drop []string
	for id := range a.tasks.m {
		if !keep[id] {
			drop = append(drop, id)
		}
	}
	a.tasks.mu.Unlock()
	for _, id := range drop {
		a.stop(id, "not wanted by the server", 10*time.Second)
	}
}

func clipReason(s string) string {
	if len(s) > wire.MaxReasonBytes {
		return s[:wire.MaxReasonBytes]
	}
	return s
}
