package agent

import (
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

	job, err := a.cfg.Runtime.Start(ctx, runtime.SpecFromStart(m))
	if err != nil {
		a.log.Warn("job could not start", "job", m.JobID, "err", err)
		now := time.Now()
		for _, s := range m.Services {
			a.out.push(item{jobID: m.JobID, state: &wire.StateChange{
				JobID: m.JobID, Service: s.Name, State: wire.StateFailed,
				Reason: clipReason(fmt.Sprintf("could not start: %v", err)), Time: now,
			}})
		}
		t.mu.Lock()
		t.ended = true
		t.mu.Unlock()
		a.forgetIfDone(m.JobID)
		return
	}
	t.mu.Lock()
	t.job = job
	t.mu.Unlock()
	a.log.Info("job started", "job", m.JobID, "services", len(m.Services))
	go a.forward(m.JobID, t, job)
}

// forward drains a job's events into the outbox, in order. The runtime
// holds back output while Events is full, so this never blocks on the
// network.
func (a *Agent) forward(id string, t *task, job runtime.Job) {
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
			a.out.push(item{jobID: id, state: &m})
		case runtime.LogEvent:
			l := ev.Wire()
			a.out.push(item{jobID: id, line: &l})
		}
	}
	res := job.Wait()
	a.log.Info("job ended", "job", id, "status", res.Status, "reason", res.Reason)
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
