package runtime

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// service is one service of a process job: a child process leading its own
// process group, so that stopping it reaches everything it started.
type service struct {
	job   *job
	index int
	spec  ServiceSpec
	dir   string
	env   []string
	ports []Port
	drain time.Duration

	mu         sync.Mutex
	cmd        *exec.Cmd
	stopReason string
	exited     bool
}

// start starts the process and the goroutines that read its output and
// wait for it. Failures end the service as FAILED.
func (s *service) start() {
	if reason := s.stoppedBeforeStart(); reason != "" {
		s.job.finish(s, Failed, nil, "stopped: "+reason, true)
		return
	}
	s.job.emitState(StateEvent{Service: s.spec.Name, State: Starting})

	argv := append(append([]string{}, s.spec.Command...), s.spec.Args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = s.dir, s.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithAgent(cmd.SysProcAttr)
	// Our own pipes rather than exec's copying goroutines: we decide how
	// long to wait for output once the process has gone.
	outR, outW, err := os.Pipe()
	if err != nil {
		s.job.finish(s, Failed, nil, fmt.Sprintf("output pipe: %v", err), false)
		return
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(outR, outW)
		s.job.finish(s, Failed, nil, fmt.Sprintf("output pipe: %v", err), false)
		return
	}
	cmd.Stdout, cmd.Stderr = outW, errW

	s.mu.Lock()
	reason := s.stopReason
	if reason == "" {
		err = cmd.Start()
		if err == nil {
			s.cmd = cmd
		}
	}
	s.mu.Unlock()
	closeAll(outW, errW) // the child has its copies
	switch {
	case reason != "":
		closeAll(outR, errR)
		s.job.finish(s, Failed, nil, "stopped: "+reason, true)
		return
	case err != nil:
		closeAll(outR, errR)
		s.job.log.Warn("service did not start", "service", s.spec.Name, "err", err)
		s.job.finish(s, Failed, nil, err.Error(), false)
		return
	}
	pid := cmd.Process.Pid
	s.job.log.Info("service started", "service", s.spec.Name, "pid", pid, "dir", s.dir)
	s.job.emitState(StateEvent{Service: s.spec.Name, State: Running, PID: pid, Ports: s.ports})

	var readers sync.WaitGroup
	for _, r := range []struct {
		f      *os.File
		stream Stream
	}{{outR, Stdout}, {errR, Stderr}} {
		readers.Go(func() {
			ReadLines(r.f, MaxLineBytes, func(line string) { s.job.emitLog(s.spec.Name, r.stream, line) })
		})
	}
	go s.wait(&readers, outR, errR)
}

func (s *service) stoppedBeforeStart() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopReason
}

// wait waits for the process, clears up its group and output, and reports
// how it ended.
func (s *service) wait(readers *sync.WaitGroup, outR, errR *os.File) {
	waitErr := s.cmd.Wait()
	s.mu.Lock()
	s.exited = true
	stopReason := s.stopReason
	s.mu.Unlock()

	// The service is over when its main process is: what it left behind in
	// its group goes too, which also closes their copies of the pipes.
	if err := syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		s.job.log.Warn("killing leftover processes", "service", s.spec.Name, "err", err)
	}
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(s.drain):
		// A process that left the group (setsid) still holds the pipes.
		s.job.log.Warn("output still open after the service ended; closing it", "service", s.spec.Name)
	}
	closeAll(outR, errR)
	<-drained

	state, code, reason := exitState(s.cmd.ProcessState, waitErr)
	if stopReason != "" {
		state, reason = Failed, "stopped: "+stopReason
	}
	s.job.finish(s, state, code, reason, stopReason != "")
}

// exitState turns a finished process into a final state.
func exitState(ps *os.ProcessState, waitErr error) (State, *int, string) {
	if ps == nil {
		return Failed, nil, fmt.Sprintf("wait: %v", waitErr)
	}
	code := ps.ExitCode()
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		// The shell's and Docker's convention, so runtimes agree.
		code = 128 + int(ws.Signal())
		return Failed, &code, "killed by signal: " + ws.Signal().String()
	}
	if code == 0 {
		return Exited, &code, ""
	}
	return Failed, &code, fmt.Sprintf("exit status %d", code)
}

// stop marks the service stopped with reason and asks it to terminate. A
// service not yet started will not start.
func (s *service) stop(reason string) {
	s.mu.Lock()
	if s.exited {
		s.mu.Unlock()
		return
	}
	if s.stopReason == "" {
		s.stopReason = reason
	}
	s.mu.Unlock()
	s.signal(syscall.SIGTERM)
}

// signal sends sig to the service's process group while its main process
// lives.
func (s *service) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.exited {
		return
	}
	if err := syscall.Kill(-s.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		s.job.log.Warn("signalling service", "service", s.spec.Name, "signal", sig, "err", err)
	}
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}
