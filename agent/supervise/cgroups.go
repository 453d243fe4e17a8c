package supervise

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupMoves are DIR=HOME pairs (-cgroup): the supervisor joins every DIR
// to start the command, then returns to every HOME.
type cgroupMoves []string

func (m *cgroupMoves) String() string     { return strings.Join(*m, ",") }
func (m *cgroupMoves) Set(v string) error { *m = append(*m, v); return nil }

// WriteControl writes v to a cgroup's control file (a limit, a member) by
// system calls, not os.WriteFile, whose file would be offered to the
// poller and given a finalizer for one write: several files a service.
func WriteControl(file, v string) error {
	fd, err := syscall.Open(file, syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: file, Err: err}
	}
	defer syscall.Close(fd)
	if err := writeFD(fd, v); err != nil {
		return &os.PathError{Op: "write", Path: file, Err: err}
	}
	return nil
}

// writeFD writes v to fd in one write, as a cgroup file takes it.
func writeFD(fd int, v string) error {
	for {
		_, err := syscall.Write(fd, []byte(v))
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// remove removes the service's cgroups, and the runtime's folder when no
// other service uses it.
func (m cgroupMoves) remove() {
	for _, mv := range m {
		dir, _, _ := strings.Cut(mv, "=")
		if RemoveCgroup(dir) == nil {
			_ = syscall.Rmdir(filepath.Dir(dir))
		}
	}
}

// RemoveCgroup kills the processes in dir and removes it; the kernel lets
// go of a cgroup a moment after its last process died. Usually none is
// left (the supervisor killed them): the removal is tried first, and the
// processes are read only when it fails.
func RemoveCgroup(dir string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("removing cgroup %s: %w", dir, err)
		}
		for _, pid := range cgroupProcs(dir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		thawCgroup(dir)
		time.Sleep(5 * time.Millisecond)
	}
}

func cgroupProcs(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// thaw thaws the service's cgroups.
func (m cgroupMoves) thaw() {
	for _, mv := range m {
		dir, _, _ := strings.Cut(mv, "=")
		thawCgroup(dir)
	}
}

// thawCgroup thaws cgroup dir, which the agent may have frozen (its node
// cut off from the server): a frozen process holds even SIGKILL until
// then. A cgroup with no freezer has neither file: nothing to thaw.
func thawCgroup(dir string) {
	_ = WriteControl(filepath.Join(dir, "freezer.state"), "THAWED")
	_ = WriteControl(filepath.Join(dir, "cgroup.freeze"), "0")
}
