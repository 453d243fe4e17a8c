package supervise

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// homes are the supervisor's own cgroups, the HOMEs it returns to after
// every task: their membership files are opened once, for all its tasks.
type homes map[string]home

// home is one of them. On cgroup v1 a cgroup's members are threads, and
// only the thread that forks the command (locked to it) moves: the rest
// of the supervisor's threads, and the threads Go starts meanwhile (from
// its template thread, for a locked thread), stay home. On v2 a domain
// cgroup's members are processes: the whole supervisor moves.
type home struct {
	fd      int
	threads bool // v1
}

func (hs homes) get(dir string) (home, error) {
	if h, ok := hs[dir]; ok {
		return h, nil
	}
	h := home{threads: true}
	fd, err := unix.Open(filepath.Join(dir, h.file()), unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) { // no tasks file: v2
		h.threads = false
		fd, err = unix.Open(filepath.Join(dir, h.file()), unix.O_WRONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return home{}, fmt.Errorf("cgroup %s: %w", dir, err)
	}
	h.fd = fd
	hs[dir] = h
	return h, nil
}

// file is the cgroup file that takes members: threads on v1, processes
// on v2.
func (h home) file() string {
	if h.threads {
		return "tasks"
	}
	return "cgroup.procs"
}

// join moves the calling thread, which must be locked to its goroutine
// and fork the command, into every DIR (the process, on v2).
func (m cgroupMoves) join(hs homes) error {
	for _, mv := range m {
		dir, hdir, _ := strings.Cut(mv, "=")
		h, err := hs.get(hdir)
		if err == nil {
			err = WriteControl(filepath.Join(dir, h.file()), h.member())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// leave moves the calling thread (the process, on v2) back to every HOME.
func (m cgroupMoves) leave(hs homes) error {
	var errs []error
	for _, mv := range m {
		_, hdir, _ := strings.Cut(mv, "=")
		h, err := hs.get(hdir)
		if err == nil {
			err = writeFD(h.fd, h.member())
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("leaving the service's cgroup: %w", err))
		}
	}
	return errors.Join(errs...)
}

// member is what the calling thread writes to move.
func (h home) member() string {
	if h.threads {
		return strconv.Itoa(unix.Gettid())
	}
	return strconv.Itoa(os.Getpid())
}
