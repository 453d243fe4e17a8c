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

// uidPool hands out the uids of a range, one per running job. A uid
// given back is cleaned (its processes killed, its files at the top of
// the scratch folders deleted) before it is handed out again, in batches
// off the jobs' path: one walk of /proc and one of the scratch folders
// serve every uid given back meanwhile (see uids_release.go).
type uidPool struct {
	r     UIDRange
	log   *slog.Logger
	locks *os.File // uidLockFile
	// stock is how many checked uids the pool keeps ready beyond those
	// jobs gave back, so that a job start does not wait for a batch; 0
	// for small ranges, which other runtimes may share.
	stock int

	mu   sync.Mutex
	cond *sync.Cond      // a batch ended
	held map[uint32]bool // by this runtime's jobs, or stuck (processes survived SIGKILL)
	// clean are uids checked by a batch (no process left, nothing in the
	// scratch folders) and still locked, so no other runtime can have
	// used them since: taking one needs no second look.
	clean map[uint32]bool
	// dirty are uids given back whose batch has not run yet; the value
	// says whether their processes may be alive (no cgroup saw them go).
	dirty map[uint32]bool
	// waiting counts acquires waiting for a batch; started and finished
	// count batches.
	waiting           int
	started, finished uint64
	inBatch           int        // uids given back that the running batch cleans
	batchMu           sync.Mutex // one batch at a time
	kick              chan struct{}
	closed            bool
	stopped           chan struct{}          // the releaser has returned
	warned            map[uint32]bool        // uids skipped for a stray process, said once
	beforeBatch       func()                 // tests: runs as a batch starts
	scratch           map[string]scratchSeen // by scratch folder; only batches use it
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
	p := &uidPool{
		r: r, log: log, locks: f,
		held: map[uint32]bool{}, clean: map[uint32]bool{}, dirty: map[uint32]bool{}, warned: map[uint32]bool{},
		scratch: map[string]scratchSeen{},
		kick:    make(chan struct{}, 1), stopped: make(chan struct{}),
	}
	if r.Count >= 256 {
		p.stock = 64
	}
	p.cond = sync.NewCond(&p.mu)
	go p.releaser()
	return p, nil
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
