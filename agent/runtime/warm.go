package runtime

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/levers9/levers9/agent/supervise"
)

// warm is a supervisor started ahead of need: loading a program costs
// milliseconds on every service start, so the runtime keeps one loaded.
// Its output pipes and status pipe are made with it; a task sent on
// task makes it a service's.
type warm struct {
	cmd            *exec.Cmd
	outR, errR     *os.File
	statusR, taskW *os.File
}

// startWarm starts a supervisor that waits for its task. stdin (nil:
// /dev/null) is its stdin, which the command inherits; tty, when not nil,
// is the terminal a command started with -tty runs on (fd 5).
func (p *Process) startWarm(stdin, tty *os.File) (*warm, error) {
	sup := p.cfg.Supervisor
	var files []*os.File
	fail := func(err error) (*warm, error) {
		closeAll(files...)
		return nil, err
	}
	pipe := func() (r, w *os.File, err error) {
		if r, w, err = os.Pipe(); err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	outR, outW, err := pipe()
	if err != nil {
		return fail(err)
	}
	errR, errW, err := pipe()
	if err != nil {
		return fail(err)
	}
	statusR, statusW, err := pipe()
	if err != nil {
		return fail(err)
	}
	taskR, taskW, err := pipe()
	if err != nil {
		return fail(err)
	}
	cmd := exec.Command(sup[0], append(append([]string{}, sup[1:]...), supervise.WarmArg)...)
	// One P: a supervisor mostly waits, and with GOMAXPROCS set its
	// runtime no longer re-reads the cgroup file system for a changed CPU
	// limit every second of the service's life. The task's environment
	// replaces this one before the command starts.
	cmd.Dir, cmd.Env = "/", []string{"GOMAXPROCS=1"}
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.ExtraFiles = []*os.File{statusW, taskR}
	if stdin != nil {
		cmd.Stdin = stdin
	}
	if tty != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, tty)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Until it has a task the default action of SIGUSR1, exit, is what
	// the agent's death should do to it.
	dieWithAgent(cmd.SysProcAttr, syscall.SIGUSR1)
	if err := cmd.Start(); err != nil {
		return fail(fmt.Errorf("starting a supervisor: %w", err))
	}
	closeAll(outW, errW, statusW, taskR) // the supervisor has its copies
	return &warm{cmd: cmd, outR: outR, errR: errR, statusR: statusR, taskW: taskW}, nil
}

// takeWarm returns the waiting supervisor, if any, and starts the next
// one in the background.
func (p *Process) takeWarm() *warm {
	var w *warm
	select {
	case w = <-p.warm:
	default:
	}
	go p.refillWarm()
	return w
}

// refillWarm starts a supervisor to wait, unless one waits already.
func (p *Process) refillWarm() {
	p.warmMu.Lock()
	defer p.warmMu.Unlock()
	if len(p.warm) > 0 || p.shut {
		return
	}
	w, err := p.startWarm(nil, nil)
	if err != nil {
		p.log.Warn("starting a supervisor ahead", "err", err)
		return
	}
	p.warm <- w
}

// assign sends w its task. On failure w is stopped.
func (w *warm) assign(t supervise.Task) error {
	b, err := t.MarshalBinary()
	if err == nil {
		_, err = w.taskW.Write(b)
	}
	_ = w.taskW.Close() // the end of the task
	if err != nil {
		_ = w.cmd.Process.Kill()
		_ = w.cmd.Wait()
		closeAll(w.outR, w.errR, w.statusR)
		return fmt.Errorf("handing the service to its supervisor: %w", err)
	}
	return nil
}

// discard stops a supervisor that will get no task.
func (w *warm) discard() {
	_ = w.taskW.Close() // it exits, finding no task
	_ = w.cmd.Wait()
	closeAll(w.outR, w.errR, w.statusR)
}
