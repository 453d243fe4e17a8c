package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"syscall"
	"time"
)

// job is a running job of the process runtime. It owns the job-level rules:
// one log sequence per job, a failed service stops its siblings, the result.
type job struct {
	id       string
	slot     int // in the runtime's records
	log      *slog.Logger
	grace    time.Duration // for stops the runtime decides itself
	timeout  time.Duration
	services []*service
	events   chan Event
	done     chan struct{}
	onEnd    func()

	// emitMu makes numbering and sending one step, so Seq order is
	// delivery order across services.
	emitMu sync.Mutex
	seq    uint64

	mu        sync.Mutex
	cause     string // first stop reason or failure
	remaining int    // services not yet final
	results   []ServiceResult
	timers    []*time.Timer
	result    Result
	freeze    FreezeState
}

// eventBuffer lets output flow while the consumer is briefly busy.
const eventBuffer = 1024

func (j *job) ID() string            { return j.id }
func (j *job) Events() <-chan Event  { return j.events }
func (j *job) Done() <-chan struct{} { return j.done }
func (j *job) Stop(reason string, grace time.Duration) {
	j.stop(reason, reason, grace)
}

func (j *job) Wait() Result {
	<-j.done
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.result
}

func (j *job) emitLog(service string, stream Stream, text string) {
	j.emitMu.Lock()
	defer j.emitMu.Unlock()
	j.seq++
	j.events <- LogEvent{JobID: j.id, Service: service, Stream: stream, Seq: j.seq, Time: time.Now(), Text: text}
}

func (j *job) emitState(ev StateEvent) {
	j.emitMu.Lock()
	defer j.emitMu.Unlock()
	ev.JobID, ev.Time = j.id, time.Now()
	j.events <- ev
}

// run starts the services in order, then the timeout clock.
func (j *job) run() {
	for _, s := range j.services {
		s.start()
	}
	if j.timeout <= 0 {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.remaining > 0 {
		j.timers = append(j.timers, time.AfterFunc(j.timeout, func() { j.stop("timeout", "timeout", j.grace) }))
	}
}

// stop records cause (unless one is recorded) and stops every service
// with reason. Nothing here emits, so a consumer may call it.
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
		s.stop(reason)
	}
	kill := func() {
		for _, s := range j.services {
			s.signal(syscall.SIGKILL)
		}
	}
	if grace <= 0 {
		kill()
		return
	}
	t := time.AfterFunc(grace, kill)
	j.mu.Lock()
	j.timers = append(j.timers, t)
	j.mu.Unlock()
}

// finish records a service's final state; the last one ends the job.
func (j *job) finish(s *service, state State, code *int, reason string, stopped bool) {
	j.emitState(StateEvent{Service: s.spec.Name, State: state, ExitCode: code, Reason: reason})
	failed := state == Failed && !stopped
	// A service's own failure is news; the rest of a job's life is the
	// agent's one line at its start and one at its end (at 500 jobs a
	// second, 1,500 lines a second fewer).
	level := slog.LevelDebug
	if failed {
		level = slog.LevelInfo
	}
	j.log.Log(context.Background(), level, "service ended", "service", s.spec.Name, "state", state, "exitCode", deref(code), "reason", reason)
	j.mu.Lock()
	j.results[s.index] = ServiceResult{Name: s.spec.Name, State: state, ExitCode: code, Reason: reason}
	j.remaining--
	if failed && j.cause == "" {
		j.cause = failure(s.spec.Name, reason)
	}
	last := j.remaining == 0
	j.mu.Unlock()
	if failed && !last {
		j.stop("", fmt.Sprintf("service %s failed", s.spec.Name), j.grace)
	}
	if last {
		j.end()
	}
}

func (j *job) end() {
	j.mu.Lock()
	for _, t := range j.timers {
		t.Stop()
	}
	j.result = Summarize(j.cause, j.results)
	res := j.result
	j.mu.Unlock()
	j.emitMu.Lock()
	close(j.events)
	j.emitMu.Unlock()
	j.log.Debug("job ended", "status", res.Status, "reason", res.Reason)
	j.onEnd()
	close(j.done)
}

// procsGone reports whether every service's cgroup saw all its processes
// end (the cgroups were emptied and removed): a job's uid cannot move a
// process out of them, so no process of the job is left anywhere.
func (j *job) procsGone() bool {
	for _, s := range j.services {
		if !s.cgroupGone.Load() {
			return false
		}
	}
	return true
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}
