package runtime

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/levers9/levers9/agent/supervise"
)

// idleSupervisors is how many supervisors wait for a task at most: one
// started ahead, the rest given back by services that ended. Loading a
// program costs milliseconds of CPU, most of it Go's runtime starting: a
// supervisor runs many services in turn (see supervise.Supervise). With
// four, a node running short jobs several at once kept stopping
// supervisors and starting others.
const idleSupervisors = 16

// idleTrim is how long supervisors beyond one may wait with no task
// taken before they are stopped: a burst's are not kept for good.
const idleTrim = 30 * time.Second

// supervisor is a supervisor process that runs the tasks it is sent on
// its control socket, one at a time.
type supervisor struct {
	cmd *exec.Cmd
	ctl *os.File // the agent's end of the control socket
	// started is when it started (supervise.ProcessStart), read for its
	// first service: with the pid it names this process in pid files.
	started uint64
}

// supervised is a task under way: the agent's ends of its pipes.
type supervised struct {
	sv                  *supervisor
	outR, errR, statusR *os.File
	status              *bufio.Reader
}

// startSupervisor starts a supervisor, which waits for its first task.
func (p *Process) startSupervisor() (*supervisor, error) {
	sup := p.cfg.Supervisor
	// Close-on-exec before any fork sees them (SOCK_CLOEXEC is not
	// everywhere), as os.Pipe does.
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("starting a supervisor: control socket: %w", err)
	}
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		_, _ = syscall.Close(fds[0]), syscall.Close(fds[1])
		return nil, fmt.Errorf("starting a supervisor: control socket: %w", err)
	}
	ctl, theirs := os.NewFile(uintptr(fds[0]), "supervisor"), os.NewFile(uintptr(fds[1]), "control")
	defer theirs.Close() // the supervisor has its copy
	cmd := exec.Command(sup[0], append(append([]string{}, sup[1:]...), supervise.WarmArg)...)
	// One P: a supervisor mostly waits, and with GOMAXPROCS set its
	// runtime no longer re-reads the cgroup file system for a changed CPU
	// limit every second of a service's life. No variable of a job's:
	// LD_PRELOAD must not reach a program that runs as root. A task's
	// environment replaces this one before its command starts.
	cmd.Dir, cmd.Env = "/", []string{"GOMAXPROCS=1"}
	cmd.ExtraFiles = []*os.File{theirs} // fd 3
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Between tasks it dies with the agent as its control socket closes;
	// during one it catches the signal and takes the service down.
	dieWithAgent(cmd.SysProcAttr, syscall.SIGUSR1)
	if err := cmd.Start(); err != nil {
		_ = ctl.Close()
		return nil, fmt.Errorf("starting a supervisor: %w", err)
	}
	return &supervisor{cmd: cmd, ctl: ctl}, nil
}

// refill starts a supervisor to wait, unless one waits already.
func (p *Process) refill() {
	p.idleMu.Lock()
	defer p.idleMu.Unlock()
	if len(p.idle) > 0 || p.shut {
		return
	}
	sv, err := p.startSupervisor()
	if err != nil {
		p.log.Warn("starting a supervisor ahead", "err", err)
		return
	}
	p.idle <- sv
}

// supervise runs t under a waiting supervisor, or a new one if none
// waits or the one taken died while it waited. stdin nil: /dev/null; tty:
// the terminal of a task with -tty.
func (p *Process) supervise(t supervise.Task, stdin, tty *os.File) (*supervised, error) {
	p.lastTake.Store(time.Now().UnixNano())
	select {
	case sv := <-p.idle:
		if len(p.idle) == 0 {
			go p.refill()
		}
		if sd, err := sv.assign(t, stdin, tty); err == nil {
			return sd, nil
		}
	default:
		go p.refill()
	}
	sv, err := p.startSupervisor()
	if err != nil {
		return nil, err
	}
	return sv.assign(t, stdin, tty)
}

// assign sends sv its task with new pipes for its output and status. On
// failure sv is stopped.
func (sv *supervisor) assign(t supervise.Task, stdin, tty *os.File) (_ *supervised, err error) {
	var ours, theirs []*os.File // the agent's ends; the supervisor's copies
	defer func() {
		closeAll(theirs...) // sent, or not to be
		if err != nil {
			closeAll(ours...)
			sv.stop()
		}
	}()
	for range 3 { // stdout, stderr, status
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("starting a service: pipe: %w", err)
		}
		ours, theirs = append(ours, r), append(theirs, w)
	}
	// A /dev/null of its own: an open file description shared between
	// services would carry its flags and owner (fcntl) from one tenant's
	// job to another's.
	if stdin == nil {
		if stdin, err = os.Open(os.DevNull); err != nil {
			return nil, err
		}
		theirs = append(theirs, stdin)
	}
	send := []*os.File{stdin, theirs[0], theirs[1], theirs[2]}
	if tty != nil {
		send = append(send, tty)
	}
	if err = supervise.SendTask(sv.ctl, t, send...); err != nil {
		return nil, fmt.Errorf("handing the service to its supervisor: %w", err)
	}
	return &supervised{sv: sv, outR: ours[0], errR: ours[1], statusR: ours[2], status: bufio.NewReader(ours[2])}, nil
}

// statusLine reads one "WORD REST" line from the task's status pipe:
// empty at its end.
func (sd *supervised) statusLine() (word, rest string) {
	line, _ := sd.status.ReadString('\n')
	word, rest, _ = strings.Cut(strings.TrimSpace(line), " ")
	return word, rest
}

// end reads the task's last status line, written once the command's
// processes are gone ("exit N" or "signal N"; "" when the supervisor
// died), and gives the supervisor back: to wait for another task, or, if
// it exits instead, reaped, with how it ended.
func (p *Process) end(sd *supervised) (word, rest string, ps *os.ProcessState, waitErr error) {
	word, rest = sd.statusLine()
	closeAll(sd.statusR)
	sv := sd.sv
	var b [1]byte
	if n, _ := sv.ctl.Read(b[:]); n == 1 && b[0] == supervise.Ready {
		p.idleMu.Lock()
		if !p.shut {
			select {
			case p.idle <- sv:
				if len(p.idle) > 1 && p.trim == nil {
					p.trim = time.AfterFunc(p.trimAfter, p.trimIdle)
				}
				p.idleMu.Unlock()
				return word, rest, nil, nil
			default:
			}
		}
		p.idleMu.Unlock()
	}
	waitErr = sv.stop()
	return word, rest, sv.cmd.ProcessState, waitErr
}

// startTime is when sv started; only one service at a time asks.
func (sv *supervisor) startTime() uint64 {
	if sv.started == 0 {
		sv.started = supervise.ProcessStart(sv.cmd.Process.Pid)
	}
	return sv.started
}

// trimIdle stops the waiting supervisors but one when none was taken for
// trimAfter; else it looks again when that will have passed.
func (p *Process) trimIdle() {
	p.idleMu.Lock()
	p.trim = nil
	if since := time.Since(time.Unix(0, p.lastTake.Load())); since < p.trimAfter {
		if len(p.idle) > 1 && !p.shut {
			p.trim = time.AfterFunc(p.trimAfter-since, p.trimIdle)
		}
		p.idleMu.Unlock()
		return
	}
	var stop []*supervisor
	for len(p.idle) > 1 {
		select {
		case sv := <-p.idle:
			stop = append(stop, sv)
		default: // taken meanwhile
		}
	}
	p.idleMu.Unlock()
	for _, sv := range stop {
		_ = sv.stop()
	}
}

// stop closes sv's control socket, which ends it when it waits for a
// task, and reaps it.
func (sv *supervisor) stop() error {
	_ = sv.ctl.Close()
	return sv.cmd.Wait()
}
