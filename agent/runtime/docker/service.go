package docker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/levers9/levers9/agent/runtime"
)

// service is one service of a job: one container.
type service struct {
	job       *job
	index     int
	name      string
	image     string
	create    client.ContainerCreateOptions // unused for recovered services
	ports     []runtime.Port
	memoryMiB int64
	missing   bool // recovered without a container

	// screenMu guards screen: a TTY service's terminal (screen.go).
	screenMu sync.Mutex
	screen   *screen

	// startMu makes deciding to start and starting one step, so a stop
	// either prevents the start or sees the container running.
	startMu sync.Mutex

	mu         sync.Mutex
	id         string // container ID once created
	tty        bool   // runs on a pseudo-terminal (ServiceSpec.TTY)
	created    bool   // created but not started (recovered services)
	running    bool   // started and not yet seen stopped
	exited     bool
	paused     bool // Freeze paused its container (freeze.go)
	stopReason string
}

// start pulls the image if needed, creates and starts the container, then
// follows it in the background. Failures end the service as FAILED.
func (s *service) start() {
	if reason := s.stoppedBeforeStart(); reason != "" {
		s.job.finish(s, runtime.Failed, nil, "stopped: "+reason, true)
		return
	}
	s.job.emitState(runtime.StateEvent{Service: s.name, State: runtime.Starting})
	progress := func(reason string) {
		s.job.emitState(runtime.StateEvent{Service: s.name, State: runtime.Starting, Reason: reason})
	}
	// A stop cancels a pull, but not a create or start: the daemon may
	// finish those after the client gave up, and the job's removal must
	// see what they made.
	if err := s.job.rt.ensureImage(s.job.startCtx, s.job.id, s.image, progress); err != nil {
		s.failStart(err)
		return
	}
	if reason := s.stoppedBeforeStart(); reason != "" {
		s.job.finish(s, runtime.Failed, nil, "stopped: "+reason, true)
		return
	}
	ctx := s.job.rt.ctx
	res, err := s.job.rt.cli.ContainerCreate(ctx, s.create)
	if err != nil {
		s.failStart(fmt.Errorf("creating container: %w", err))
		return
	}
	for _, w := range res.Warnings {
		s.job.log.Warn("docker warns", "service", s.name, "warning", w)
	}
	s.mu.Lock()
	s.id, s.tty = res.ID, s.create.Config.Tty
	s.mu.Unlock()
	s.startCreated()
}

// startCreated starts the created container unless the service was stopped
// meanwhile, reports it RUNNING and follows it in the background.
func (s *service) startCreated() {
	s.startMu.Lock()
	reason := s.stoppedBeforeStart()
	var err error
	if reason == "" && s.tty {
		// Attached before the start, so that no output is missed.
		if _, err := s.openScreen(s.job.rt.ctx, s.id, false); err != nil {
			s.job.log.Warn("no terminal until the first attach", "service", s.name, "err", err)
		}
	}
	if reason == "" {
		_, err = s.job.rt.cli.ContainerStart(s.job.rt.ctx, s.id, client.ContainerStartOptions{})
		if err == nil {
			s.mu.Lock()
			s.running, s.created = true, false
			s.mu.Unlock()
		}
	}
	s.startMu.Unlock()
	if reason != "" || err != nil {
		s.closeScreen()
	}
	switch {
	case reason != "":
		s.job.finish(s, runtime.Failed, nil, "stopped: "+reason, true)
		return
	case err != nil && strings.Contains(err.Error(), "could not select device driver"):
		s.failStart(fmt.Errorf("starting container: this node's Docker has no NVIDIA runtime for GPUs (NVIDIA Container Toolkit): %w", err))
		return
	case err != nil:
		s.failStart(fmt.Errorf("starting container: %w", err))
		return
	}
	pid := 0
	if res, err := s.job.rt.cli.ContainerInspect(s.job.rt.ctx, s.id, client.ContainerInspectOptions{}); err == nil && res.Container.State != nil {
		pid = res.Container.State.Pid
	}
	if s.job.isFrozen() {
		// Its job was frozen while it started.
		if err := s.pause(s.job.rt.ctx); err != nil {
			s.job.log.Warn("freezing a service that started in a frozen job", "service", s.name, "err", err)
		}
	}
	s.job.log.Info("service started", "service", s.name, "container", shortID(s.id), "image", s.image)
	s.job.emitState(runtime.StateEvent{Service: s.name, State: runtime.Running, PID: pid, Ports: s.ports})
	go s.follow(time.Time{})
}

// failStart ends a service that could not start: stopped, abandoned (the
// runtime was closed) or failed with err's message.
func (s *service) failStart(err error) {
	if s.job.rt.ctx.Err() != nil {
		s.job.abandon(s)
		return
	}
	if reason := s.stoppedBeforeStart(); reason != "" {
		s.job.finish(s, runtime.Failed, nil, "stopped: "+reason, true)
		return
	}
	s.job.log.Warn("service did not start", "service", s.name, "err", err)
	s.job.finish(s, runtime.Failed, nil, err.Error(), false)
}

func (s *service) stoppedBeforeStart() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopReason
}

// follow reads the container's output (lines stamped after `after` only)
// until it stops, then reports how it ended once all output is read and
// handed on, however long the consumer takes: the agent holds the job back
// while the server is behind, and the rest of the log goes with the
// container at the job's end. Only a log stream the daemon leaves silent
// after the stop is given up on, and a system line then says where the log
// was cut.
func (s *service) follow(after time.Time) {
	ctx := s.job.rt.ctx
	out := s.output(after)
	logCtx, cancelLogs := context.WithCancel(ctx)
	defer cancelLogs()
	logsDone := make(chan error, 1)
	go func() { logsDone <- out.follow(logCtx) }()

	wait := s.job.rt.cli.ContainerWait(ctx, s.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	var waitErr error
	select {
	case <-wait.Result:
	case waitErr = <-wait.Error:
	}
	if ctx.Err() != nil {
		cancelLogs()
		<-logsDone
		s.job.abandon(s)
		return
	}
	s.mu.Lock()
	s.running, s.exited = false, true
	stopReason := s.stopReason
	s.mu.Unlock()

	followErr, followCut := out.await(ctx, time.Now(), stuckAfter, logsDone, cancelLogs)
	if ctx.Err() != nil {
		s.job.abandon(s)
		return
	}
	switch {
	case followCut:
		s.job.log.Warn("output still open after the container stopped, though the daemon sends nothing; reading it again",
			"service", s.name, "silentFor", stuckAfter)
	case followErr != nil:
		s.job.log.Warn("reading output", "service", s.name, "err", followErr)
	}
	// Docker can end a follow before the output flushed at exit, and a cut
	// one ended anywhere: the rest is read once more, without following.
	finishCtx, cancelFinish := context.WithCancel(ctx)
	finishDone := make(chan error, 1)
	go func() { finishDone <- out.finish(finishCtx) }()
	err, cut := out.await(ctx, time.Now(), stuckAfter, finishDone, cancelFinish)
	cancelFinish()
	if ctx.Err() != nil {
		s.job.abandon(s)
		return
	}
	if cut {
		// err is only the cancel's.
		err = fmt.Errorf("the daemon sent nothing for %s after the container stopped", stuckAfter)
	}
	if err != nil {
		s.job.log.Warn("reading the last output", "service", s.name, "err", err)
		if followCut || followErr != nil {
			// Neither read reached the end of the log: it is cut, and
			// whoever reads it learns where.
			s.job.emitLog(s.name, runtime.System, out.lastSeen(), out.cutNote(err))
		}
	}

	state, code, reason := s.exitState(ctx, waitErr, stopReason == "")
	if stopReason != "" {
		state, reason = runtime.Failed, "stopped: "+stopReason
	}
	s.job.finish(s, state, code, reason, stopReason != "")
}

// oomRechecks and oomRecheckEvery bound the second looks at a container
// killed by SIGKILL for the daemon's late out-of-memory flag.
const (
	oomRechecks     = 5
	oomRecheckEvery = 100 * time.Millisecond
)

// exitState turns a stopped container into a final state.
// A service that was not stopped (unstopped) and died by SIGKILL is looked
// at again for the daemon's late out-of-memory flag.
func (s *service) exitState(ctx context.Context, waitErr error, unstopped bool) (runtime.State, *int, string) {
	res, err := s.job.rt.cli.ContainerInspect(ctx, s.id, client.ContainerInspectOptions{})
	if err != nil || res.Container.State == nil {
		if waitErr != nil {
			err = waitErr
		}
		return runtime.Failed, nil, fmt.Sprintf("container lost: %v", err)
	}
	st := res.Container.State
	// The daemon may learn of an OOM kill just after the exit (the kernel's
	// event and the exit race), so a SIGKILL death is looked at again for a
	// moment before it is called anything but out of memory.
	for try := 0; unstopped && st.ExitCode == 137 && !st.OOMKilled && try < oomRechecks; try++ {
		select {
		case <-ctx.Done():
			try = oomRechecks
			continue
		case <-time.After(oomRecheckEvery):
		}
		again, err := s.job.rt.cli.ContainerInspect(ctx, s.id, client.ContainerInspectOptions{})
		if err != nil || again.Container.State == nil {
			break
		}
		st = again.Container.State
	}
	code := st.ExitCode
	switch {
	case code == 0:
		// Something in the container may have been killed for memory, but
		// the service itself succeeded.
		return runtime.Exited, &code, ""
	case st.OOMKilled:
		if s.memoryMiB > 0 {
			return runtime.Failed, &code, fmt.Sprintf("out of memory (limit %s)", memoryLimit(s.memoryMiB))
		}
		return runtime.Failed, &code, "out of memory"
	case st.Error != "":
		return runtime.Failed, &code, st.Error
	default:
		// Docker reports death by signal n as 128+n, as shells do.
		return runtime.Failed, &code, fmt.Sprintf("exit status %d", code)
	}
}

// stop marks the service stopped with reason and, if its container runs,
// stops it: SIGTERM, SIGKILL after grace. A service not yet started will
// not start. It does not wait.
func (s *service) stop(reason string, grace time.Duration) {
	s.mu.Lock()
	if s.exited {
		s.mu.Unlock()
		return
	}
	if s.stopReason == "" {
		s.stopReason = reason
	}
	s.mu.Unlock()
	go s.stopContainer(grace)
}

func (s *service) stopContainer(grace time.Duration) {
	// Waits for a start in progress, so a container starting right now is
	// stopped too.
	s.startMu.Lock()
	s.mu.Lock()
	id, running := s.id, s.running
	s.mu.Unlock()
	s.startMu.Unlock()
	if !running {
		return
	}
	if s.killPaused(id) {
		return // no grace for a frozen service: it could not use it
	}
	secs := int(math.Ceil(max(grace, 0).Seconds()))
	_, err := s.job.rt.cli.ContainerStop(s.job.rt.ctx, id, client.ContainerStopOptions{Timeout: &secs})
	if err != nil && !cerrdefs.IsNotFound(err) && !errors.Is(err, context.Canceled) {
		s.job.log.Warn("stopping container", "service", s.name, "err", err)
	}
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
