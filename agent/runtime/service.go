package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/levers9/levers9/agent/supervise"
)

// service is one service of a process job: a command leading its own
// process group, under a supervisor when the runtime has one.
type service struct {
	job     *job
	rt      *Process
	index   int
	spec    ServiceSpec
	dir     string
	env     []string
	ports   []Port
	drain   time.Duration // how long output may be silent after the service ended
	pipes   []*outputPipe
	user    *jobUser // nil: the agent's
	binds   []supervise.Bind
	halt    chan struct{} // closed by the first stop: ends a wait for a venv
	venvBin string        // with a Venv: its bin folder, where commands are looked up first
	tty     *ttyHub       // with spec.TTY: the terminal it runs on
	supArgs []string      // the supervisor's options (-uid, -cgroup, -binds), for Exec
	// cgroupGone: the service's processes all ran in its cgroups, which
	// were emptied and removed (see job.procsGone).
	cgroupGone atomic.Bool

	mu         sync.Mutex
	cmd        *exec.Cmd   // the supervisor, or the command itself
	sup        *supervised // the service's task, with a supervisor
	pgid       int         // the command's process group
	cgroup     *serviceCgroup
	stopReason string
	running    bool // the command started (RUNNING was reported)
	exited     bool
	frozen     string // how the service is frozen (freeze.go); "" when not
	execs      map[*execProc]struct{}
}

// start starts the process and the goroutines that read its output and
// wait for it. Failures end the service as FAILED.
func (s *service) start() {
	if reason := s.stoppedBeforeStart(); reason != "" {
		s.job.finish(s, Failed, nil, "stopped: "+reason, true)
		return
	}
	s.job.emitState(StateEvent{Service: s.spec.Name, State: Starting})
	if s.spec.Venv != nil {
		if !s.useVenv() {
			return
		}
	}
	if s.rt.cgroups != nil {
		if notice := s.rt.cgroups.notice(s.spec); notice != "" {
			s.job.emitLog(s.spec.Name, Stderr, notice)
		}
	}
	if s.spec.TTY {
		hub, err := newTTYHub(s.user)
		if err != nil {
			s.job.finish(s, Failed, nil, err.Error(), false)
			return
		}
		s.tty = hub
	}
	cmd, task, err := s.command()
	if err != nil {
		s.tty.release()
		s.job.finish(s, Failed, nil, err.Error(), false)
		return
	}
	var outR, errR *os.File
	var reason string
	if task != nil {
		// A supervisor, one waiting when there is one: it started with no
		// environment of the job's (LD_PRELOAD must not reach a program
		// that runs as root) and gets its task on its control socket.
		s.mu.Lock()
		if reason = s.stopReason; reason == "" {
			var sd *supervised
			if sd, err = s.rt.supervise(*task, nil, s.tty.slaveFile()); err == nil {
				s.sup, cmd = sd, sd.sv.cmd
				outR, errR = sd.outR, sd.errR
				// Signals wait for the command's own group, below.
				s.cmd, s.pgid = cmd, 0
			}
		}
		s.mu.Unlock()
	} else if s.tty != nil {
		s.mu.Lock()
		if reason = s.stopReason; reason == "" {
			if err = cmd.Start(); err == nil {
				s.cmd, s.pgid = cmd, cmd.Process.Pid
			}
		}
		s.mu.Unlock()
	} else {
		// Our own pipes rather than exec's copying goroutines: we decide how
		// long to wait for output once the process has gone.
		var outW, errW *os.File
		if outR, outW, err = os.Pipe(); err != nil {
			s.cleanup()
			s.job.finish(s, Failed, nil, fmt.Sprintf("output pipe: %v", err), false)
			return
		}
		if errR, errW, err = os.Pipe(); err != nil {
			closeAll(outR, outW)
			s.cleanup()
			s.job.finish(s, Failed, nil, fmt.Sprintf("output pipe: %v", err), false)
			return
		}
		cmd.Stdout, cmd.Stderr = outW, errW
		s.mu.Lock()
		reason = s.stopReason
		if reason == "" {
			err = cmd.Start()
			if err == nil {
				s.cmd, s.pgid = cmd, cmd.Process.Pid
			}
		}
		s.mu.Unlock()
		closeAll(outW, errW) // the child has its copies
	}
	switch {
	case reason != "":
		closeAll(outR, errR)
		s.cleanup()
		s.job.finish(s, Failed, nil, "stopped: "+reason, true)
		return
	case err != nil:
		closeAll(outR, errR)
		s.cleanup()
		s.job.log.Warn("service did not start", "service", s.spec.Name, "err", err)
		s.job.finish(s, Failed, nil, err.Error(), false)
		return
	}
	var started uint64
	if s.sup != nil {
		started = s.sup.sv.startTime()
	} else {
		started = supervise.ProcessStart(cmd.Process.Pid)
	}
	if err := s.rt.rec.service(s.job.slot, s.index, s.spec.Name, cmd.Process.Pid, started, s.pgid); err != nil {
		s.job.log.Warn("recording the service's supervisor", "service", s.spec.Name, "err", err)
	}
	var readers sync.WaitGroup
	read := func(f *os.File, stream Stream, tee func([]byte)) {
		p := &outputPipe{f: f, idle: s.drain}
		s.pipes = append(s.pipes, p)
		var r io.Reader = p
		if tee != nil {
			r = teeReader{r: masterReader{p}, tee: tee}
		}
		readers.Go(func() {
			ReadLinesNoting(r, MaxLineBytes, func(line string) { s.job.emitLog(s.spec.Name, stream, line) },
				func(size, pieces int) {
					s.job.emitLog(s.spec.Name, System, SplitNote(stream, size, pieces, MaxLineBytes))
				})
		})
	}
	if outR != nil { // a supervisor's, or the command's without a terminal
		read(outR, Stdout, nil)
		read(errR, Stderr, nil)
	}
	if s.tty != nil {
		// What the service writes on its terminal is its stdout, and goes
		// to the attaches as it is.
		s.tty.handOver()
		read(s.tty.master, Stdout, s.tty.publish)
	}
	pid := cmd.Process.Pid
	if s.sup != nil {
		// The supervisor says whether the command started, and its pid.
		word, rest := s.sup.statusLine()
		switch word {
		case "pid":
			pid, _ = strconv.Atoi(rest)
			if pid <= 1 {
				// Signals go to -pid: never to every process (-1) or none.
				s.mu.Lock()
				s.pgid = 0
				s.mu.Unlock()
				s.wait(&readers, outR, errR, fmt.Sprintf("the supervisor reported pid %q", rest))
				return
			}
			s.mu.Lock()
			s.pgid = pid
			s.mu.Unlock()
			// A stop that came while the command started reaches it now.
			if r := s.stoppedBeforeStart(); r != "" {
				s.signal(syscall.SIGTERM)
			}
		default:
			if rest == "" {
				rest = "the supervisor ended before starting the command"
			}
			s.mu.Lock()
			s.pgid = 0
			s.mu.Unlock()
			// At once, so that siblings are stopped before they start.
			s.wait(&readers, outR, errR, rest)
			return
		}
	}
	s.job.log.Debug("service started", "service", s.spec.Name, "pid", pid, "dir", s.dir)
	s.mu.Lock()
	s.running = true
	s.mu.Unlock()
	if s.job.isFrozen() {
		// Its job was frozen while it started.
		if err := s.freeze(context.Background()); err != nil {
			s.job.log.Warn("freezing a service that started in a frozen job", "service", s.spec.Name, "err", err)
		}
	}
	s.job.emitState(StateEvent{Service: s.spec.Name, State: Running, PID: pid, Ports: s.ports})
	go s.wait(&readers, outR, errR, "")
}

// command is, without a supervisor, the command itself to start; with
// one, the task its supervisor is given.
func (s *service) command() (*exec.Cmd, *supervise.Task, error) {
	argv := append(append([]string{}, s.spec.Command...), s.spec.Args...)
	argv[0] = s.venvCommand(argv[0])
	sup := s.rt.cfg.Supervisor
	if len(sup) == 0 {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir, cmd.Env = s.dir, s.env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if s.tty != nil {
			cmd.Stdin, cmd.Stdout, cmd.Stderr = s.tty.slave, s.tty.slave, s.tty.slave
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		}
		if u := s.user; u != nil {
			cmd.SysProcAttr.Credential = &syscall.Credential{Uid: u.uid, Gid: u.gid, Groups: []uint32{}}
		}
		dieWithAgent(cmd.SysProcAttr, syscall.SIGKILL)
		return cmd, nil, nil
	}
	var args []string // after the supervisor's own argv (see Supervise)
	if u := s.user; u != nil {
		args = append(args, "-uid", strconv.FormatUint(uint64(u.uid), 10), "-gid", strconv.FormatUint(uint64(u.gid), 10))
	}
	if s.rt.cgroups != nil && len(s.rt.cgroups.hier) > 0 {
		cg, err := s.rt.cgroups.create(s.job.id, s.spec, s.rt.cfg.PidsLimit)
		if err != nil {
			// Run unconfined rather than not at all, and say so.
			s.job.log.Warn("no cgroup for the service", "service", s.spec.Name, "err", err)
			s.job.emitLog(s.spec.Name, Stderr, fmt.Sprintf("levers9: this service runs without CPU and memory limits: %v", err))
		} else {
			s.cgroup = cg
			for _, mv := range cg.moves {
				args = append(args, "-cgroup", mv)
			}
		}
	}
	if len(s.binds) > 0 {
		b, err := json.Marshal(s.binds)
		if err != nil {
			s.cleanup()
			return nil, nil, fmt.Errorf("mounts: %w", err)
		}
		args = append(args, "-binds", string(b))
	}
	s.supArgs = slices.Clone(args)
	if s.tty != nil {
		args = append(args, "-tty")
	}
	args = append(append(args, "--"), argv...)
	return nil, &supervise.Task{Args: args, Dir: s.dir, Env: s.env}, nil
}

// cleanup removes the service's cgroups once its processes are gone.
func (s *service) cleanup() {
	s.tty.release()
	if err := s.cgroup.remove(); err != nil {
		s.job.log.Warn("removing the service's cgroup", "service", s.spec.Name, "err", err)
	} else if s.cgroup != nil && len(s.cgroup.dirs) > 0 {
		s.cgroupGone.Store(true)
	}
	if err := s.rt.rec.clearService(s.job.slot, s.index); err != nil {
		s.job.log.Warn("clearing the service's record", "service", s.spec.Name, "err", err)
	}
}

func (s *service) stoppedBeforeStart() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopReason
}

// wait waits for the process, clears up its group and output, and reports
// how it ended. notStarted is why a supervised command did not start.
func (s *service) wait(readers *sync.WaitGroup, outR, errR *os.File, notStarted string) {
	var state State
	var code *int
	var reason string
	if s.sup == nil {
		waitErr := s.cmd.Wait()
		state, code, reason = exitState(s.cmd.ProcessState, waitErr)
	} else {
		// Once the command's processes are all gone (a supervisor sees to
		// that itself, and the group may be gone, its number free).
		word, rest, ps, waitErr := s.rt.end(s.sup)
		state, code, reason = supervisedExit(word, rest, ps, waitErr)
	}
	s.mu.Lock()
	s.exited = true
	stopReason := s.stopReason
	pgid := s.pgid
	s.mu.Unlock()
	// Commands exec'd in the service end with it (and leave its cgroup).
	s.endExecs()

	// The service is over when its main process is: what it left behind
	// goes too, which also closes their copies of the pipes.
	if s.sup == nil {
		if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			s.job.log.Warn("killing leftover processes", "service", s.spec.Name, "err", err)
		}
	}
	// What the service wrote is read to the end however long the reader
	// waits for room (the agent's back-pressure): only silence, or more
	// than a pipe can hold, ends it, for a process that left the group
	// (setsid) may hold the pipes open.
	for _, p := range s.pipes {
		p.exit()
	}
	readers.Wait()
	closeAll(outR, errR)
	if s.tty != nil {
		s.tty.outputEnded()
	}

	// Read before the cgroup goes, and only for a failure it may explain.
	oom := state == Failed && stopReason == "" && notStarted == "" && s.cgroup.oomKilled()
	s.cleanup()
	switch {
	case stopReason != "":
		state, reason = Failed, "stopped: "+stopReason
	case notStarted != "":
		state, code, reason = Failed, nil, notStarted
	case oom:
		reason = OutOfMemory(s.spec.MemoryMiB)
	}
	if s.tty != nil {
		s.tty.exit(code, reason)
	}
	s.job.finish(s, state, code, reason, stopReason != "")
}

// supervisedExit is how a command ended, as its supervisor's last status
// line says; without one (the supervisor was killed), how the supervisor
// ended.
func supervisedExit(word, rest string, ps *os.ProcessState, waitErr error) (State, *int, string) {
	n, err := strconv.Atoi(rest)
	switch {
	case err != nil:
	case word == "exit" && n == 0:
		return Exited, &n, ""
	case word == "exit":
		return Failed, &n, fmt.Sprintf("exit status %d", n)
	case word == "signal":
		c := 128 + n
		return Failed, &c, "killed by signal: " + syscall.Signal(n).String()
	}
	return exitState(ps, waitErr)
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
		if s.halt != nil {
			close(s.halt)
		}
	}
	s.mu.Unlock()
	if s.killFrozen() {
		return // no grace for a frozen service: it could not use it
	}
	s.signal(syscall.SIGTERM)
}

// signal sends sig to the command's process group while its supervisor (or
// main process) lives.
func (s *service) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.exited || s.pgid <= 0 {
		return
	}
	if err := syscall.Kill(-s.pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		s.job.log.Warn("signalling service", "service", s.spec.Name, "signal", sig, "err", err)
	}
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			_ = f.Close()
		}
	}
}

// maxPipeBytes is the most a pipe can hold (Linux's default
// /proc/sys/fs/pipe-max-size): what a service wrote before it ended fits.
const maxPipeBytes = 1 << 20

// outputPipe is the read end of a service's stdout or stderr. After the
// service ended it is read until it stays silent for idle or has given
// maxPipeBytes more: the rest of the service's output, not the endless
// output of a process that escaped its group.
type outputPipe struct {
	f     *os.File
	idle  time.Duration
	ended atomic.Bool
	after int // bytes read since the end; only the reader touches it
}

func (p *outputPipe) Read(b []byte) (int, error) {
	ended := p.ended.Load()
	if ended {
		if p.after >= maxPipeBytes {
			return 0, io.EOF
		}
		_ = p.f.SetReadDeadline(time.Now().Add(p.idle))
		b = b[:min(len(b), maxPipeBytes-p.after)]
	}
	n, err := p.f.Read(b)
	if ended {
		p.after += n
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = io.EOF
	}
	return n, err
}

// exit starts the end: a read waiting for output gives up after idle.
func (p *outputPipe) exit() {
	p.ended.Store(true)
	_ = p.f.SetReadDeadline(time.Now().Add(p.idle))
}
