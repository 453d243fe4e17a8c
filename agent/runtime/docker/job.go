package docker

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/levers9/levers9/agent/runtime"
)

// job is a job attempt on Docker. It owns the job-level rules, the same as
// the process runtime's: one log sequence per job, a failed service stops
// its siblings, the timeout, the result; and at the end it removes the
// attempt's containers and network.
type job struct {
	rt       *Runtime
	id       string
	attempt  int
	log      *slog.Logger
	timeout  time.Duration
	services []*service
	events   chan runtime.Event
	done     chan struct{}
	// startCtx bounds pulls: a stop cancels it so that a long pull does
	// not hold the job.
	startCtx    context.Context
	cancelStart context.CancelFunc

	// emitMu makes numbering and sending one step, so Seq order is
	// delivery order across services.
	emitMu sync.Mutex
	seq    uint64
	silent atomic.Bool // a recovered job stopped before Resume reports nothing

	mu        sync.Mutex
	cause     string // first stop reason or failure
	remaining int    // services not yet final
	abandoned bool   // the runtime was closed under the job
	results   []runtime.ServiceResult
	timers    []*time.Timer
	result    runtime.Result
	freeze    runtime.FreezeState
}

// eventBuffer lets output flow while the consumer is briefly busy.
const eventBuffer = 1024

func newJob(rt *Runtime, id string, attempt int, timeout time.Duration, n int) *job {
	startCtx, cancel := context.WithCancel(rt.ctx)
	return &job{
		rt: rt, id: id, attempt: attempt, timeout: timeout,
		log:      rt.log.With("job", id, "attempt", attempt),
		events:   make(chan runtime.Event, eventBuffer),
		done:     make(chan struct{}),
		startCtx: startCtx, cancelStart: cancel,
		remaining: n,
		results:   make([]runtime.ServiceResult, n),
	}
}

func (j *job) ID() string                   { return j.id }
func (j *job) Events() <-chan runtime.Event { return j.events }
func (j *job) Done() <-chan struct{}        { return j.done }
func (j *job) Stop(reason string, grace time.Duration) {
	j.stop(reason, reason, grace)
}

func (j *job) Wait() runtime.Result {
	<-j.done
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.result
}

func (j *job) emitLog(service string, stream runtime.Stream, at time.Time, text string) {
	j.emitMu.Lock()
	defer j.emitMu.Unlock()
	if j.silent.Load() {
		return
	}
	j.seq++
	j.events <- runtime.LogEvent{JobID: j.id, Service: service, Stream: stream, Seq: j.seq, Time: at, Text: text}
}

func (j *job) emitState(ev runtime.StateEvent) {
	j.emitMu.Lock()
	defer j.emitMu.Unlock()
	if j.silent.Load() {
		return
	}
	ev.JobID, ev.Time = j.id, time.Now()
	j.events <- ev
}

// run starts the services in order, then the timeout clock.
func (j *job) run() {
	for _, s := range j.services {
		s.start()
	}
	j.startTimeout(j.timeout)
}

// startTimeout stops the job with reason "timeout" after d.
func (j *job) startTimeout(d time.Duration) {
	if j.timeout <= 0 {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.remaining > 0 {
		j.timers = append(j.timers, time.AfterFunc(max(d, 0), func() {
			j.stop("timeout", "timeout", j.rt.cfg.StopGrace)
		}))
	}
}

// stop records cause (unless one is recorded) and stops every service
// with reason. Nothing here emits or waits, so a consumer may call it.
func (j *job) stop(cause, reason string, grace time.Duration) {
	j.mu.Lock()
	if j.remaining == 0 {
		j.mu.Unlock()
		return
	}
	if j.cause == "" {
		j.cause = cause
	}
	j.mu.Unlock()
	j.log.Info("stopping job", "reason", reason, "grace", grace)
	for _, s := range j.services {
		s.stop(reason, grace)
	}
	// After the reasons are set, so a start that this cancels knows why.
	j.cancelStart()
}

// finish records a service's final state; the last one ends the job.
func (j *job) finish(s *service, state runtime.State, code *int, reason string, stopped bool) {
	j.emitState(runtime.StateEvent{Service: s.name, State: state, ExitCode: code, Reason: reason})
	j.log.Info("service ended", "service", s.name, "state", state, "exitCode", deref(code), "reason", reason)
	j.mu.Lock()
	j.results[s.index] = runtime.ServiceResult{Name: s.name, State: state, ExitCode: code, Reason: reason}
	j.remaining--
	failed := state == runtime.Failed && !stopped
	if failed && j.cause == "" {
		if reason == "" {
			j.cause = fmt.Sprintf("service %s failed", s.name)
		} else {
			j.cause = fmt.Sprintf("service %s failed: %s", s.name, reason)
		}
	}
	last := j.remaining == 0
	j.mu.Unlock()
	if failed && !last {
		j.stop("", fmt.Sprintf("service %s failed", s.name), j.rt.cfg.StopGrace)
	}
	if last {
		j.end()
	}
}

// abandon gives up watching a service because the runtime was closed: its
// container keeps running for a later agent to recover.
func (j *job) abandon(s *service) {
	j.log.Info("runtime closed; leaving the service running", "service", s.name)
	j.mu.Lock()
	j.results[s.index] = runtime.ServiceResult{Name: s.name, State: runtime.Running, Reason: "runtime closed"}
	j.remaining--
	j.abandoned = true
	last := j.remaining == 0
	j.mu.Unlock()
	if last {
		j.end()
	}
}

// end removes what the attempt left (unless the runtime was closed under
// it), then closes Events and Done.
func (j *job) end() {
	j.mu.Lock()
	for _, t := range j.timers {
		t.Stop()
	}
	abandoned := j.abandoned
	cause := j.cause
	if abandoned {
		cause = "docker runtime closed; the job's containers keep running"
	}
	j.result = runtime.Summarize(cause, j.results)
	res := j.result
	j.mu.Unlock()
	j.cancelStart()
	if !abandoned {
		ctx, cancel := context.WithTimeout(context.Background(), removeTimeout)
		if err := j.rt.removeAttempt(ctx, j.id, j.attempt); err != nil {
			j.log.Warn("removing the job's containers", "err", err)
		}
		cancel()
	}
	j.emitMu.Lock()
	close(j.events)
	j.emitMu.Unlock()
	j.log.Info("job ended", "status", res.Status, "reason", res.Reason)
	j.rt.release(j.id)
	close(j.done)
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}
