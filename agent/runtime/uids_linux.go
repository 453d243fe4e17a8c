package runtime

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// fOFDSetLK is F_OFD_SETLK (linux/fcntl.h): a record lock owned by the
// open file description, not the process, so that two runtimes in one
// process (tests) exclude each other too.
const fOFDSetLK = 37

// uidsSupported: a uid per job works here.
func uidsSupported() error { return nil }

// lockUID takes the lock of uid in the lock file; false when another
// holds it.
func lockUID(f *os.File, uid uint32) (bool, error) {
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: int64(uid), Len: 1}
	err := syscall.FcntlFlock(f.Fd(), fOFDSetLK, &lk)
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	return true, nil
}

func unlockUID(f *os.File, uid uint32) error {
	lk := syscall.Flock_t{Type: syscall.F_UNLCK, Whence: 0, Start: int64(uid), Len: 1}
	return syscall.FcntlFlock(f.Fd(), fOFDSetLK, &lk)
}

// procUIDs are the uids of a living process (real, effective, saved,
// file system), from /proc/PID/status; false for a zombie or no process.
func procUIDs(pid string) ([]uint32, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return nil, false
	}
	var uids []uint32
	for line := range strings.Lines(string(b)) {
		name, value, _ := strings.Cut(line, ":")
		switch name {
		case "State":
			if v := strings.TrimSpace(value); strings.HasPrefix(v, "Z") || strings.HasPrefix(v, "X") {
				return nil, false
			}
		case "Uid":
			for _, f := range strings.Fields(value) {
				if n, err := strconv.ParseUint(f, 10, 32); err == nil {
					uids = append(uids, uint32(n))
				}
			}
		}
	}
	return uids, len(uids) > 0
}

// pids lists the processes in /proc.
func pids() []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, e.Name())
		}
	}
	return out
}

// processUIDs is the set of uids living processes run as.
func processUIDs() map[uint32]bool {
	out := map[uint32]bool{}
	for _, pid := range pids() {
		uids, _ := procUIDs(pid)
		for _, u := range uids {
			out[u] = true
		}
	}
	return out
}

// killUID kills every process that runs as uid until none is left or
// deadline passes. Each is signalled through a pidfd (os.FindProcess)
// taken before its uid is read, so that a pid reused meanwhile is never
// signalled.
func killUID(uid uint32, deadline time.Time) error {
	for {
		found := 0
		for _, pid := range pids() {
			n, _ := strconv.Atoi(pid)
			proc, err := os.FindProcess(n)
			if err != nil {
				continue
			}
			if uids, ok := procUIDs(pid); ok && slices.Contains(uids, uid) {
				found++
				_ = proc.Signal(syscall.SIGKILL)
			}
			_ = proc.Release()
		}
		if found == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d processes of uid %d still run after SIGKILL", found, uid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fileOwner is the uid that owns path (not following a link).
func fileOwner(path string) (uint32, bool) {
	fi, err := os.Lstat(path)
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}
