package runtime

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// UIDRange is a block of uids set aside for jobs, First to
// First+Count-1 (see ProcessConfig.UIDs).
type UIDRange struct {
	First, Count uint32
}

// ParseUIDRange reads "FIRST:COUNT", as flags give it.
func ParseUIDRange(s string) (UIDRange, error) {
	first, count, ok := strings.Cut(strings.TrimSpace(s), ":")
	f, err1 := strconv.ParseUint(first, 10, 32)
	c, err2 := strconv.ParseUint(count, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return UIDRange{}, fmt.Errorf("uid range %q: want FIRST:COUNT, such as 1900000000:65536", s)
	}
	r := UIDRange{First: uint32(f), Count: uint32(c)}
	return r, r.check()
}

// IsZero reports whether no range is set.
func (r UIDRange) IsZero() bool { return r == UIDRange{} }

// Last is the range's highest uid.
func (r UIDRange) Last() uint32 { return r.First + r.Count - 1 }

// String is the range as ParseUIDRange reads it.
func (r UIDRange) String() string { return fmt.Sprintf("%d:%d", r.First, r.Count) }

func (r UIDRange) check() error {
	switch {
	case r.Count == 0:
		return fmt.Errorf("uid range %s is empty", r)
	case r.First == 0:
		return fmt.Errorf("uid range %s holds uid 0 (root)", r)
	// (uid_t)-1 means "no change" to setresuid: it is nobody's uid.
	case uint64(r.First)+uint64(r.Count) > math.MaxUint32:
		return fmt.Errorf("uid range %s goes past uid %d", r, uint32(math.MaxUint32-1))
	}
	return nil
}

// ErrNoFreeUID is why a job did not start when every uid of the range is
// taken.
var ErrNoFreeUID = errors.New("no free job uid")

// uidLockFile is shared by every process runtime on the machine: a lock
// on byte N (an open file description lock, released when its holder
// dies) says that uid N belongs to a running job, so that runtimes whose
// ranges overlap (two built-in nodes with the default range) never hand
// one uid to two jobs. Under /run, it goes with a reboot, as the jobs do.
var uidLockFile = "/run/levers9/job-uids.lock"

// scratchDirs are the folders anyone may write to, where a job may leave
// files that a later job with its uid must not find.
var scratchDirs = []string{"/tmp", "/var/tmp", "/dev/shm"}

// uidPool hands out the uids of a range, one per running job.
type uidPool struct {
	r     UIDRange
	log   *slog.Logger
	locks *os.File // uidLockFile

	mu   sync.Mutex
	held map[uint32]bool // by this runtime's jobs
	// clean are uids this runtime gave back itself, checked then (no
	// process left, nothing in the scratch folders) and still locked, so
	// no other runtime can have used them since: taking one again needs
	// no second look, which keeps scans of /proc and /tmp off the path of
	// every job start.
	clean map[uint32]bool
}

// CheckUIDs says why r cannot be the job uids of a process runtime here
// (see ProcessConfig.UIDs), nil when it can, but for the need of root.
func CheckUIDs(r UIDRange) error {
	if err := r.check(); err != nil {
		return err
	}
	if err := uidsSupported(); err != nil {
		return fmt.Errorf("job uids %s: %w", r, err)
	}
	return checkUnused(r)
}

func newUIDPool(r UIDRange, log *slog.Logger) (*uidPool, error) {
	if err := CheckUIDs(r); err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("job uids %s: running jobs as other users needs the agent to run as root", r)
	}
	if err := os.MkdirAll(filepath.Dir(uidLockFile), 0o755); err != nil {
		return nil, fmt.Errorf("job uids: %w", err)
	}
	f, err := os.OpenFile(uidLockFile, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("job uids: %w", err)
	}
	return &uidPool{r: r, log: log, locks: f, held: map[uint32]bool{}, clean: map[uint32]bool{}}, nil
}

// checkUnused refuses a range that holds a local account or group: its
// files and processes would be a job's, and a job's leftovers of that uid
// are deleted.
func checkUnused(r UIDRange) error {
	for _, db := range []struct{ file, what string }{{"/etc/passwd", "user"}, {"/etc/group", "group"}} {
		f, err := os.Open(db.file)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("job uids: %w", err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Split(sc.Text(), ":")
			if len(fields) < 3 {
				continue
			}
			id, err := strconv.ParseUint(fields[2], 10, 32)
			if err == nil && id >= uint64(r.First) && id <= uint64(r.Last()) {
				_ = f.Close()
				return fmt.Errorf("job uids %s: the range holds the %s %s (%d) of %s; choose uids nothing on this machine uses", r, db.what, fields[0], id, db.file)
			}
		}
		_ = f.Close()
	}
	return nil
}

// acquire takes the lowest uid that no job holds (here or in another
// runtime on the machine) and no process uses, after deleting what an
// earlier job of that uid left in the scratch folders (its agent died).
func (p *uidPool) acquire() (uint32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var inUse map[uint32]bool // read once, when first needed
	for i := range p.r.Count {
		uid := p.r.First + i
		if p.held[uid] {
			continue
		}
		if p.clean[uid] {
			delete(p.clean, uid)
			p.held[uid] = true
			return uid, nil
		}
		ok, err := lockUID(p.locks, uid)
		if err != nil {
			return 0, fmt.Errorf("job uid %d: %w", uid, err)
		}
		if !ok {
			continue // another runtime's job
		}
		if inUse == nil {
			inUse = processUIDs()
		}
		if inUse[uid] {
			// Not a job of a live runtime: a stray process, not ours to kill.
			p.log.Warn("a job uid is skipped: processes run as it", "uid", uid)
			_ = unlockUID(p.locks, uid)
			continue
		}
		removeFilesOf(uid, p.log)
		p.held[uid] = true
		return uid, nil
	}
	return 0, fmt.Errorf("%w: all %d uids of %d-%d belong to running jobs; this node runs at most that many jobs at once", ErrNoFreeUID, p.r.Count, p.r.First, p.r.Last())
}

// release gives uid back to this runtime once its job's processes are gone and its
// working directory deleted: whatever still runs as it (a process that
// escaped its service) is killed, and what it left in the scratch folders
// deleted. A uid whose processes survive SIGKILL stays taken.
func (p *uidPool) release(uid uint32) {
	if err := killUID(uid, time.Now().Add(30*time.Second)); err != nil {
		p.log.Error("processes of an ended job survive; its uid stays taken", "uid", uid, "err", err)
		return
	}
	removeFilesOf(uid, p.log)
	p.mu.Lock()
	defer p.mu.Unlock()
	// Its lock is kept (it goes with this process): the uid stays this
	// runtime's, clean, for its next job.
	delete(p.held, uid)
	p.clean[uid] = true
}

// removeFilesOf deletes what uid owns at the top of the scratch folders.
// Only jobs use the range's uids (checkUnused), and uid has no process.
func removeFilesOf(uid uint32, log *slog.Logger) {
	for _, dir := range scratchDirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			path := filepath.Join(dir, e.Name())
			if owner, ok := fileOwner(path); ok && owner == uid {
				if err := os.RemoveAll(path); err != nil {
					log.Warn("deleting a job's leftover", "uid", uid, "path", path, "err", err)
				}
			}
		}
	}
}
