package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/levers9/levers9/agent/supervise"
)

var _ Freezer = (*job)(nil)

// How a service is frozen.
const (
	frozenCgroup = "cgroup" // its cgroup's freezer: every process in it
	frozenSignal = "signal" // SIGSTOP to its process group (no freezer)
)

// Freeze implements Freezer: each service's cgroup freezer where it has
// one, else SIGSTOP to its process group.
func (j *job) Freeze(ctx context.Context) error {
	return SetFrozen(&j.freeze, true, j.services, func(s *service) error { return s.freeze(ctx) })
}

// Thaw implements Freezer.
func (j *job) Thaw(ctx context.Context) error {
	return SetFrozen(&j.freeze, false, j.services, func(s *service) error { return s.thaw(ctx) })
}

func (j *job) isFrozen() bool { return j.freeze.Frozen() }

// freeze freezes the service's processes if its command runs.
func (s *service) freeze(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.exited || s.pgid <= 0 || s.frozen != "" {
		return nil
	}
	if dir := s.cgroup.freezerDir(); dir != "" {
		err := setFrozen(ctx, dir, s.cgroup.v2, true)
		if err == nil {
			s.frozen = frozenCgroup
			s.job.log.Info("service frozen", "service", s.spec.Name, "by", "cgroup freezer")
			return nil
		}
		s.job.log.Warn("freezing the service's cgroup; stopping its processes instead", "service", s.spec.Name, "err", err)
		_ = setFrozen(context.Background(), dir, s.cgroup.v2, false)
	}
	if err := syscall.Kill(-s.pgid, syscall.SIGSTOP); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("freezing service %s: %w", s.spec.Name, err)
	}
	s.frozen = frozenSignal
	waitStopped(ctx, s.pgid)
	s.job.log.Info("service frozen", "service", s.spec.Name, "by", "SIGSTOP")
	return nil
}

// waitStopped waits a moment for process pid to have taken its SIGSTOP
// (the kernel delivers it when the process next runs), so that a frozen
// service is stopped when Freeze returns.
func waitStopped(ctx context.Context, pid int) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return // gone, or no /proc
		}
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 || i+2 >= len(b) || b[i+2] == 'T' || b[i+2] == 't' {
			return
		}
		if b[i+2] == 'D' && stoppedChild(pid) {
			return // a shell in vfork, waiting for a child that stopped
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Millisecond):
		}
	}
}

// thaw lets a frozen service run again.
func (s *service) thaw(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.thawLocked(ctx)
}

func (s *service) thawLocked(ctx context.Context) error {
	how := s.frozen
	s.frozen = ""
	switch how {
	case frozenCgroup:
		if err := setFrozen(ctx, s.cgroup.freezerDir(), s.cgroup.v2, false); err != nil {
			return fmt.Errorf("thawing service %s: %w", s.spec.Name, err)
		}
	case frozenSignal:
		if s.pgid > 0 {
			if err := syscall.Kill(-s.pgid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("thawing service %s: %w", s.spec.Name, err)
			}
		}
	default:
		return nil
	}
	s.job.log.Info("service thawed", "service", s.spec.Name)
	return nil
}

// killFrozen kills a frozen service's process group and thaws it, so that
// the kill lands (a v1 freezer holds even SIGKILL); it reports whether
// the service was frozen.
func (s *service) killFrozen() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.frozen == "" {
		return false
	}
	if s.pgid > 0 {
		_ = syscall.Kill(-s.pgid, syscall.SIGKILL)
	}
	if err := s.thawLocked(context.Background()); err != nil {
		s.job.log.Warn("thawing a frozen service to kill it", "service", s.spec.Name, "err", err)
	}
	return true
}

// stoppedChild reports whether a child of process pid is stopped.
func stoppedChild(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return false
	}
	for _, f := range strings.Fields(string(b)) {
		st, err := os.ReadFile("/proc/" + f + "/stat")
		if i := strings.LastIndexByte(string(st), ')'); err == nil && i > 0 && i+2 < len(st) && (st[i+2] == 'T' || st[i+2] == 't') {
			return true
		}
	}
	return false
}

// freezerDir is the cgroup whose freezer freezes the service; "" when none.
func (sc *serviceCgroup) freezerDir() string {
	if sc == nil {
		return ""
	}
	return sc.freezer
}

// setFrozen freezes (or thaws) cgroup dir and waits until the kernel says
// it is done: v1 passes through FREEZING, v2 reports "frozen 1" in
// cgroup.events.
func setFrozen(ctx context.Context, dir string, v2 bool, frozen bool) error {
	file, value, want := "freezer.state", "THAWED", "THAWED"
	if frozen {
		value, want = "FROZEN", "FROZEN"
	}
	if v2 {
		file, value, want = "cgroup.freeze", "0", "frozen 0"
		if frozen {
			value, want = "1", "frozen 1"
		}
	}
	if err := supervise.WriteControl(filepath.Join(dir, file), value); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		var b []byte
		var err error
		if v2 {
			b, err = os.ReadFile(filepath.Join(dir, "cgroup.events"))
		} else {
			b, err = os.ReadFile(filepath.Join(dir, file))
		}
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.TrimSpace(line) == want {
				return nil
			}
		}
		if !v2 && frozen {
			// v1 gets stuck in FREEZING when a task cannot be frozen
			// right now: asking again retries it.
			_ = supervise.WriteControl(filepath.Join(dir, file), value)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: still %q: %w", dir, strings.TrimSpace(string(b)), ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}
