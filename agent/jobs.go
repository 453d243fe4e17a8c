package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/wire"
)

// task is a job the agent was given (or found again after a restart). It
// is forgotten once it ended and all its reports reached the server, so a
// reconnect still lists it until then and the server does not take it for
// lost.
type task struct {
	attempt  int // the job's run this is; every report carries it
	job      runtime.Job
	received time.Time
	over     chan struct{} // closed when the task has ended
	mu       sync.Mutex
	services map[string]*wire.RunningService
	// ports are the host ports of the running services (relay streams
	// reach only these).
	ports   map[string][]runtime.Port
	ended   bool
	stopped string     // a Stop's reason, when it came before the job started
	mounts  *mounted   // nil without mounts
	runner  *runnerJob // a function's container; nil for other jobs
	// frozen: the fence froze the job (the server was out of reach too
	// long) and the server's Reconcile has not yet thawed or stopped it.
	frozen bool
	// recovered is a job an earlier agent started, waiting for the
	// server's Reconcile to be resumed or stopped; nil once decided.
	recovered runtime.Recovered
}

func newTask(attempt int, at time.Time) *task {
	return &task{attempt: max(attempt, 1), received: at, over: make(chan struct{}), services: map[string]*wire.RunningService{}}
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

// start runs a Start through the runtime and forwards its events. A Start
// of a later attempt than the one the agent runs replaces it: the old run
// is stopped and has ended before the new one starts, so two attempts
// never run side by side.
func (a *Agent) start(ctx context.Context, m wire.Start) {
	attempt := max(m.Attempt, 1)
	a.tasks.mu.Lock()
	old := a.tasks.m[m.JobID]
	if old != nil && old.attempt >= attempt {
		a.tasks.mu.Unlock()
		return // a resend: keep the running one
	}
	t := newTask(attempt, time.Now())
	for _, s := range m.Services {
		t.services[s.Name] = &wire.RunningService{JobID: m.JobID, Service: s.Name, Attempt: attempt, StartedAt: t.received}
	}
	a.tasks.m[m.JobID] = t
	a.tasks.mu.Unlock()

	// Starting may take long (a container runtime creates networks and
	// pulls images; an old attempt must end; buckets sync down): the
	// tunnel goes on meanwhile, and jobs start side by side.
	go func() {
		ctx, span := a.startSpan(ctx, m, attempt)
		defer span.End()
		if old != nil {
			a.log.Info("replacing an earlier attempt of the job", "job", m.JobID, "old", old.attempt, "attempt", attempt)
			a.stopTask(m.JobID, old, fmt.Sprintf("replaced by attempt %d", attempt), 10*time.Second)
			select {
			case <-old.over:
			case <-ctx.Done():
				return
			}
		}
		spec := runtime.SpecFromStart(m)
		if len(m.Mounts) > 0 {
			mctx, mspan := a.span(ctx, "agent.mounts")
			mt, err := a.prepareMounts(mctx, m.JobID, m.Mounts)
			endSpan(mspan, err)
			t.mu.Lock()
			t.mounts = mt
			t.mu.Unlock()
			if err != nil {
				a.fail(ctx, m, t, fmt.Sprintf("could not prepare its mounts: %v", err))
				return
			}
			spec.Mounts = mt.spec
		}
		if m.Runner != nil {
			rctx, rspan := a.span(ctx, "agent.runner")
			rj, err := a.prepareRunner(rctx, m, t.received, &spec)
			endSpan(rspan, err)
			if err != nil {
				a.fail(ctx, m, t, fmt.Sprintf("could not prepare the function's container: %v", err))
				return
			}
			t.mu.Lock()
			t.runner = rj
			t.mu.Unlock()
		}
		a.launch(ctx, m, t, spec)
	}()
}

// stopGraceWhileStarting is the grace of a Stop that came while its job
// was being started, when the runtime had nothing to stop yet.
const stopGraceWhileStarting = 10 * time.Second

// launch starts spec through the runtime, unless a Stop came first.
func (a *Agent) launch(ctx context.Context, m wire.Start, t *task, spec runtime.JobSpec) {
	t.mu.Lock()
	stopped := t.stopped
	t.mu.Unlock()
	if stopped != "" {
		a.fail(ctx, m, t, stopped)
		return
	}
	rctx, rspan := a.span(ctx, "agent.runtime.start")
	job, err := a.startJob(rctx, m, spec)
	endSpan(rspan, err)
	if err != nil {
		a.fail(ctx, m, t, fmt.Sprintf("could not start: %v", err))
		return
	}
	t.mu.Lock()
	t.job = job
	stopped = t.stopped // a Stop that came while the runtime started it
	t.mu.Unlock()
	a.log.Info("job started", "job", m.JobID, "attempt", t.attempt, "services", len(m.Services))
	if a.fence.isFrozen() {
		// Started while the server is out of reach: frozen like the rest.
		a.freezeTask(ctx, m.JobID, t)
	}
	go a.forward(m.JobID, t, job)
	a.runnerStarted(t)
	if stopped != "" {
		job.Stop(stopped, stopGraceWhileStarting)
	}
}

// startJob starts spec through the runtime: a blueprint build (m.Build)
// through its Builder, whose job reports like any other.
func (a *Agent) startJob(ctx context.Context, m wire.Start, spec runtime.JobSpec) (runtime.Job, error) {
	if m.Build == nil {
		return a.cfg.Runtime.Start(ctx, spec)
	}
	b, ok := a.cfg.Runtime.(runtime.Builder)
	if !ok {
		return nil, errors.New("this node's runtime cannot build blueprints: it runs no containers")
	}
	bs := runtime.BuildSpec{
		ID: spec.ID, Attempt: spec.Attempt, Tenant: spec.Tenant, Timeout: spec.Timeout,
		Service: runtime.ServiceSpec{Name: runtime.BuildService},
		Build:   *m.Build,
		Code: func(ctx context.Context, hash string) (string, error) {
			return a.codeDir(ctx, m.JobID, hash)
		},
		Upload: func(ctx context.Context, key string, tar io.Reader, stepsBuilt int) error {
			return a.uploadImage(ctx, m.JobID, key, tar, stepsBuilt)
		},
	}
	if len(spec.Services) > 0 {
		bs.Service = spec.Services[0]
	}
	return b.Build(ctx, bs)
}

// fail reports every service of a job that never ran as failed.
func (a *Agent) fail(ctx context.Context, m wire.Start, t *task, reason string) {
	a.log.Warn("job could not start", "job", m.JobID, "reason", reason)
	failSpan(ctx, reason)
	t.mu.Lock()
	mt := t.mounts
	t.mu.Unlock()
	if err := mt.cleanup(); err != nil {
		a.log.Warn("removing mounts", "job", m.JobID, "err", err)
	}
	now := time.Now()
	for _, s := range m.Services {
		a.out.push(item{jobID: m.JobID, attempt: t.attempt, state: &wire.StateChange{
			JobID: m.JobID, Attempt: t.attempt, Service: s.Name, State: wire.StateFailed,
			Reason: clipReason(reason), Time: now,
		}})
	}
	a.finished(m.JobID, t)
}

// forward drains a job's events into the outbox, in order. While the
// outbox is full it waits, and the runtime holds back the job's output
// (Events fills), so a job that prints faster than the server stores is
// slowed down, never cut.
func (a *Agent) forward(id string, t *task, job runtime.Job) {
	t.mu.Lock()
	mt := t.mounts
	t.mu.Unlock()
	// With mounts to save, services' ends are held back until the results
	// are in their buckets: the job ends on the server only then, and
	// fails if they could not be saved.
	hold := mt != nil && len(mt.syncs) > 0
	var held []wire.StateChange
	quota := &logQuota{limit: a.cfg.LogQuota}
	for ev := range job.Events() {
		switch ev := ev.(type) {
		case runtime.StateEvent:
			if ev.State == runtime.Exited || ev.State == runtime.Failed {
				// Before the end it precedes, so a follower that sees the
				// end finds it.
				a.pushQuotaReport(id, t, quota)
			}
			t.mu.Lock()
			if rs := t.services[ev.Service]; rs != nil {
				switch ev.State {
				case runtime.Running:
					rs.PID, rs.StartedAt = ev.PID, ev.Time
				}
			}
			switch ev.State {
			case runtime.Running:
				if t.ports == nil {
					t.ports = map[string][]runtime.Port{}
				}
				t.ports[ev.Service] = ev.Ports
			case runtime.Exited, runtime.Failed:
				delete(t.ports, ev.Service)
			}
			t.mu.Unlock()
			m := ev.Wire()
			m.Attempt = t.attempt
			if hold && (ev.State == runtime.Exited || ev.State == runtime.Failed) {
				held = append(held, m)
				continue
			}
			a.out.push(item{jobID: id, attempt: t.attempt, state: &m})
		case runtime.LogEvent:
			l := ev.Wire()
			// Stored times keep microseconds (PostgreSQL's precision):
			// sent as stored, they mark exactly where a resumed log goes on.
			l.Time = l.Time.Truncate(time.Microsecond)
			if l, ok := quota.take(l); ok {
				a.out.push(item{jobID: id, attempt: t.attempt, line: &l})
			}
		}
	}
	if a.exiting.Load() {
		// The agent is going away and its runtime stopped watching: the
		// job goes on (containers) and the next agent takes it over, so
		// its mounts stay and nothing is reported as ended.
		return
	}
	a.pushQuotaReport(id, t, quota)
	res := job.Wait()
	a.log.Info("job ended", "job", id, "attempt", t.attempt, "status", res.Status, "reason", res.Reason)
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
			a.out.push(item{jobID: id, attempt: t.attempt, state: &held[i]})
		}
	}
	if err := mt.cleanup(); err != nil {
		a.log.Warn("removing mounts", "job", id, "err", err)
	}
	a.finished(id, t)
}

// pushQuotaReport queues the note naming the lines the log quota dropped
// since the last one, if any.
func (a *Agent) pushQuotaReport(id string, t *task, q *logQuota) {
	if l, ok := q.report(); ok {
		a.out.push(item{jobID: id, attempt: t.attempt, line: &l})
	}
}

// finished marks t ended and forgets it once its reports are sent.
func (a *Agent) finished(id string, t *task) {
	t.mu.Lock()
	if !t.ended {
		t.ended = true
		close(t.over)
	}
	rj := t.runner
	t.mu.Unlock()
	rj.close()
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
	if t != nil {
		a.stopTask(id, t, reason, grace)
	}
}

func (a *Agent) stopTask(id string, t *task, reason string, grace time.Duration) {
	t.mu.Lock()
	job := t.job
	if job == nil && t.stopped == "" {
		t.stopped = cmp.Or(reason, "stopped") // still preparing its mounts
	}
	t.recovered = nil // decided: not to be resumed
	t.mu.Unlock()
	if job != nil {
		a.log.Info("stopping job", "job", id, "attempt", t.attempt, "reason", reason)
		job.Stop(reason, grace)
	}
}

// reconcile resumes the recovered jobs the server still wants, from where
// its copy of their log ends, and stops every job it no longer lists as
// running here.
func (a *Agent) reconcile(m wire.Reconcile) {
	keep := map[string][]wire.RunningService{}
	for _, r := range m.Running {
		keep[r.JobID] = append(keep[r.JobID], r)
	}
	a.tasks.mu.Lock()
	var drop []string
	var resume []*task
	var resumeIDs []string
	for id, t := range a.tasks.m {
		rs, ok := keep[id]
		if !ok || max(rs[0].Attempt, 1) != t.attempt {
			drop = append(drop, id)
			continue
		}
		t.mu.Lock()
		if t.recovered != nil {
			resume, resumeIDs = append(resume, t), append(resumeIDs, id)
		}
		t.mu.Unlock()
	}
	a.tasks.mu.Unlock()
	for _, id := range drop {
		// A frozen job is killed at once (the runtime's Stop).
		a.stop(id, "not wanted by the server", 10*time.Second)
	}
	for i, t := range resume {
		a.resume(resumeIDs[i], t, keep[resumeIDs[i]])
	}
	// The jobs the server still wants here go on where they were frozen.
	a.tasks.mu.Lock()
	var thaw []string
	for id := range a.tasks.m {
		if !slices.Contains(drop, id) {
			thaw = append(thaw, id)
		}
	}
	a.tasks.mu.Unlock()
	for _, id := range thaw {
		if t := a.tasks.get(id); t != nil {
			a.thawTask(id, t)
		}
	}
	a.fence.lift()
}

// resume lets a recovered job's events flow again, from right after the
// lines the server has: the attempt's last seq, and per service the time
// of its last stored line. Stored times are whole microseconds, so output
// within that microsecond is the stored line itself.
func (a *Agent) resume(id string, t *task, rs []wire.RunningService) {
	t.mu.Lock()
	rec := t.recovered
	t.recovered = nil
	t.mu.Unlock()
	if rec == nil {
		return
	}
	cursor := runtime.LogCursor{After: map[string]time.Time{}}
	for _, r := range rs {
		cursor.Seq = max(cursor.Seq, r.LogSeq)
		if !r.LastLine.IsZero() {
			cursor.After[r.Service] = r.LastLine.Add(time.Microsecond - time.Nanosecond)
		}
	}
	a.log.Info("resuming a job found running", "job", id, "attempt", t.attempt, "logSeq", cursor.Seq)
	rec.Resume(cursor)
	if fz, ok := rec.(runtime.Freezer); ok {
		// An earlier agent may have frozen it, cut off from the server.
		if err := fz.Thaw(context.Background()); err != nil {
			a.log.Error("thawing a job found frozen", "job", id, "err", err)
		}
	}
}

func clipReason(s string) string {
	if len(s) > wire.MaxReasonBytes {
		return s[:wire.MaxReasonBytes]
	}
	return s
}

// get is the task of job id, or nil.
func (ts *tasks) get(id string) *task {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.m[id]
}

// hasPort reports whether service runs with host port port: the only
// addresses a relayed connection may reach.
func (t *task) hasPort(service string, port int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.ports[service] {
		if p.Port == port {
			return true
		}
	}
	return false
}
