package docker

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/levers9/levers9/agent/supervise"
)

// hostProcess is an exec'd process seen from the agent, held by a pidfd:
// a signal can never reach another process that reused its PID.
type hostProcess struct {
	mu  sync.Mutex
	pid int
	fd  int // -1 once released
}

// openHostProcess opens the process that the daemon calls pid, if it is
// in container containerID: an agent in another PID namespace than the
// daemon's could find another process under that number. Its cgroup,
// read after the pidfd was opened, names the container.
func openHostProcess(pid int, containerID string) (*hostProcess, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("opening process %d: %w", pid, err)
	}
	cgroup, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil || !strings.Contains(string(cgroup), containerID) {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("process %d is not the command in container %s as seen from the agent", pid, shortID(containerID))
	}
	return &hostProcess{pid: pid, fd: fd}, nil
}

var errReleased = errors.New("the exec was closed")

// signal sends sig; a process that ended already is no error.
func (p *hostProcess) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fd < 0 {
		return errReleased
	}
	err := unix.PidfdSendSignal(p.fd, sig, nil, 0)
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("signalling process %d: %w", p.pid, err)
	}
	return nil
}

// kill SIGKILLs the process's descendants, then the process: killed alone
// it would leave its children holding the output open. The process is
// stopped first, so that it neither goes on when a child dies nor reaps
// one: while it lives (checked through the pidfd), its PID and those of
// its children are theirs.
func (p *hostProcess) kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fd < 0 {
		return nil
	}
	if err := unix.PidfdSendSignal(p.fd, unix.SIGSTOP, nil, 0); errors.Is(err, unix.ESRCH) {
		return nil // ended
	}
	// A few rounds: a child may fork while its siblings die.
	for range 3 {
		kids := supervise.Descendants(p.pid)
		if len(kids) == 0 {
			break
		}
		for _, k := range kids {
			_ = unix.Kill(k, unix.SIGKILL)
		}
	}
	if err := unix.PidfdSendSignal(p.fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("killing process %d: %w", p.pid, err)
	}
	return nil
}

func (p *hostProcess) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fd >= 0 {
		_ = unix.Close(p.fd)
		p.fd = -1
	}
}
