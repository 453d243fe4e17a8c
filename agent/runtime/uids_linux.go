package runtime

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
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

// killUIDs walks /proc, killing every process that runs as a uid of
// kill, until none is left or deadline passes; stuck are the uids whose
// processes outlive it. seen are the uids of watch that some process runs
// as (looked at in the first walk only). A process is signalled through a
// pidfd (os.FindProcess) taken before its uids are read again, so that a
// pid reused meanwhile is never signalled.
func killUIDs(kill, watch map[uint32]bool, deadline time.Time) (stuck, seen map[uint32]bool, err error) {
	seen = map[uint32]bool{}
	for first := true; ; first = false {
		found := map[uint32]bool{}
		for _, pid := range pids() {
			uids, ok := procUIDs(pid)
			if !ok {
				continue
			}
			hit := false
			for _, u := range uids {
				if first && watch[u] {
					seen[u] = true
				}
				hit = hit || kill[u]
			}
			if hit {
				signalIfUIDs(pid, kill, found)
			}
		}
		if len(found) == 0 {
			return nil, seen, nil
		}
		if time.Now().After(deadline) {
			return found, seen, fmt.Errorf("processes of %d uids still run after SIGKILL", len(found))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// signalIfUIDs kills pid if, read again after its pidfd is taken, it runs
// as a uid of kill, noting that uid in found.
func signalIfUIDs(pid string, kill, found map[uint32]bool) {
	n, _ := strconv.Atoi(pid)
	proc, err := os.FindProcess(n)
	if err != nil {
		return
	}
	defer proc.Release()
	uids, ok := procUIDs(pid)
	if !ok {
		return
	}
	for _, u := range uids {
		if kill[u] {
			found[u] = true
			_ = proc.Signal(syscall.SIGKILL)
			return
		}
	}
}

// ownerAt is the uid that owns name in the open folder dir (not
// following a link).
func ownerAt(dir *os.File, name string) (uint32, bool) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, false
	}
	return st.Uid, true
}

// dirStamp names a folder's state: any entry added, removed or renamed
// changes its times.
type dirStamp struct {
	dev, ino     uint64
	mtime, ctime int64
}

// stampOf is st's stamp, and whether it can stand for the folder's
// entries: a change in the clock tick that set its times may leave them
// as they are, so times less than a second old prove nothing.
func stampOf(st *unix.Stat_t) (dirStamp, bool) {
	s := dirStamp{dev: uint64(st.Dev), ino: st.Ino, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
	recent := time.Now().Add(-time.Second).UnixNano()
	return s, s.mtime < recent && s.ctime < recent
}

func stampFile(f *os.File) (dirStamp, bool) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return dirStamp{}, false
	}
	return stampOf(&st)
}

func stampPath(path string) (dirStamp, bool) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return dirStamp{}, false
	}
	return stampOf(&st)
}
