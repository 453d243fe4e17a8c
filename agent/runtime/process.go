package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/levers9/levers9/agent/supervise"
)

// ProcessConfig configures the process runtime.
type ProcessConfig struct {
	// Root holds the working directories, Root/JOBID/SERVICE, which are
	// deleted when the job ends, and Root/.running, the jobs and the
	// supervisors of running services, for a later agent to clean up
	// (see records).
	Root string
	// User is who the services of every job run as: a user name or
	// uid[:gid]. Another user needs the agent to run as root. Jobs that
	// share a user may read each other's files and signal each other's
	// processes: UIDs keeps them apart. Neither User nor UIDs: the agent's
	// own user, for trusted single-user machines.
	User string
	// UIDs gives every running job a uid of its own from this range (and
	// the gid of the same number, no supplementary groups): the lowest
	// free one when the job starts, held until the job has ended and its
	// working directory is deleted. Before another job gets it, whatever
	// still runs as it (a process that escaped its service) is killed,
	// and what it left at the top of /tmp, /var/tmp and /dev/shm deleted:
	// in the background, uids of jobs that end close together in one
	// batch, and at the latest by Close. Mounted folders are given to the job's uid as
	// they are to User (so a folder that two running jobs mount in place
	// is the later one's). The uids need no account: HOME is the service's
	// working directory, USER and LOGNAME levers9-job-UID. Nothing else
	// on the machine may use them: NewProcess refuses a range that holds
	// a user or group of /etc/passwd or /etc/group. Runtimes on one
	// machine may share a range; a lock file under /run keeps their jobs'
	// uids apart. A job that finds every uid taken does not start
	// (ErrNoFreeUID). Needs root, and Linux. User and UIDs exclude each
	// other: NewProcess refuses a config with both.
	UIDs UIDRange
	// Supervisor is the argv prefix that runs Supervise, such as the
	// agent's own binary and supervise.Arg. Without one, services are
	// direct children of the agent: run as User, but processes that leave
	// the service's process group may outlive it (with UIDs, not its
	// job), and no cgroup limits
	// apply.
	Supervisor []string
	// PidsLimit bounds the processes of one service where cgroups allow.
	// 0: DefaultPidsLimit; negative: no limit.
	PidsLimit int64
	Logger    *slog.Logger // nil: discard
	// StopGrace is the grace period when the runtime stops a job itself
	// (timeout, a failed service). Default 10s.
	StopGrace time.Duration
	// DrainTimeout is how long output may stay silent after a service's
	// process group is gone before its pipes are closed, in case an
	// escaped process keeps them open. Default 5s.
	DrainTimeout time.Duration
	// VenvDir keeps the virtual environments of blueprints (services with
	// a Venv), one folder per blueprint key, kept across jobs and agent
	// restarts. Jobs' users must be able to enter it (every folder above
	// it open to others for search). Default: Root/.venvs.
	VenvDir string
	// VenvPipArgs are pip options of the operator's added to every pip
	// install of a virtual environment (an index, --find-links, --no-index):
	// tenants name packages only (wire.CheckVenv refuses their options).
	VenvPipArgs []string
}

// DefaultPidsLimit is the process limit of a service unless configured.
const DefaultPidsLimit = 4096

// Process runs every service as a process tree under a supervisor (see
// Supervise), as the configured user or its job's own uid, in a working
// directory of its own that is deleted when the job ends. Services of a
// job reach each other on 127.0.0.1 at the ports in their LEVERS9_*
// variables.
//
// Where the agent may create cgroups, each service gets its own with its
// CPU quota, memory limit (memory plus swap) and a process limit; where it
// may not, a service that asks for limits is told so on its stderr.
// RLIMIT_AS is never set: it breaks programs that reserve address space,
// such as CUDA and the JVM. GPUs are assigned through CUDA_VISIBLE_DEVICES
// and NVIDIA_VISIBLE_DEVICES. Services do not survive the agent: its death
// makes the supervisors kill them, and a new runtime on the same root kills
// whatever an earlier one left.
type Process struct {
	cfg     ProcessConfig
	log     *slog.Logger
	user    *jobUser // every job's (User); nil: see uids
	uids    *uidPool // one uid per job (UIDs); nil with neither: the agent's user
	cgroups *cgroups // nil without a supervisor
	rec     *records

	mu   sync.Mutex
	jobs map[string]bool // running job IDs

	// idle holds the supervisors waiting for a task (with a Supervisor);
	// idleMu makes refilling one step and guards shut, set by Close.
	idle   chan *supervisor
	idleMu sync.Mutex
	shut   bool
	// trim, when set, will stop the waiting supervisors but one if none
	// is taken for trimAfter (idleTrim) since lastTake (Unix ns).
	trim      *time.Timer
	trimAfter time.Duration
	lastTake  atomic.Int64

	// venvMu guards venvs: the builds of virtual environments under way,
	// one per key however many services wait for it.
	venvMu sync.Mutex
	venvs  map[string]*venvBuild
}

var (
	_ Runtime   = (*Process)(nil)
	_ io.Closer = (*Process)(nil)
)

// ProcessHost is where services of the process runtime listen and reach
// each other.
const ProcessHost = "127.0.0.1"

// NewProcess returns a process runtime rooted at cfg.Root, creating it,
// after stopping whatever services an earlier runtime on that root left
// running and deleting their working directories.
func NewProcess(cfg ProcessConfig) (*Process, error) {
	if cfg.Root == "" {
		return nil, errors.New("process runtime: a root directory is required")
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("process runtime: root: %w", err)
	}
	cfg.Root = root
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 10 * time.Second
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 5 * time.Second
	}
	if cfg.PidsLimit == 0 {
		cfg.PidsLimit = DefaultPidsLimit
	}
	if cfg.VenvDir == "" {
		cfg.VenvDir = filepath.Join(root, venvsDir)
	}
	p := &Process{cfg: cfg, log: cfg.Logger.With("runtime", "process"), jobs: map[string]bool{}, venvs: map[string]*venvBuild{}}
	switch {
	case cfg.User != "" && !cfg.UIDs.IsZero():
		return nil, errors.New("process runtime: set a job user or a range of job uids, not both")
	case cfg.User != "":
		if p.user, err = lookupUser(cfg.User); err != nil {
			return nil, fmt.Errorf("process runtime: %w", err)
		}
	case !cfg.UIDs.IsZero():
		if p.uids, err = newUIDPool(cfg.UIDs, p.log); err != nil {
			return nil, fmt.Errorf("process runtime: %w", err)
		}
	}
	// Others may pass through to their own working directory, never list.
	if err := os.MkdirAll(root, 0o711); err != nil {
		return nil, fmt.Errorf("process runtime: %w", err)
	}
	if err := os.Chmod(root, 0o711); err != nil {
		return nil, fmt.Errorf("process runtime: %w", err)
	}
	if len(cfg.Supervisor) > 0 {
		p.cgroups = detectCgroups(root)
	} else {
		p.cgroups = &cgroups{why: "no supervisor"}
	}
	if err := p.stopLeftovers(); err != nil {
		return nil, fmt.Errorf("process runtime: %w", err)
	}
	if p.rec, err = openRecords(filepath.Join(root, recordsName)); err != nil {
		return nil, fmt.Errorf("process runtime: %w", err)
	}
	if p.cgroups.why != "" {
		p.log.Warn("CPU, memory or process limits are not all enforced", "why", p.cgroups.why)
	}
	who := cmp.Or(cfg.User, "(the agent's)")
	if p.uids != nil {
		who = fmt.Sprintf("one uid per job of %d-%d", cfg.UIDs.First, cfg.UIDs.Last())
	}
	p.log.Info("process runtime ready", "root", root, "user", who, "supervised", len(cfg.Supervisor) > 0)
	if len(cfg.Supervisor) > 0 {
		p.idle, p.trimAfter = make(chan *supervisor, idleSupervisors), idleTrim
		go p.refill()
	}
	return p, nil
}

// Name implements Runtime.
func (p *Process) Name() string { return "process" }

// WorkDir is the working directory service of job jobID runs in, below
// which its mounts appear: the agent tells a function's runner the
// absolute paths of its code and socket.
func (p *Process) WorkDir(jobID, service string) string {
	return filepath.Join(p.cfg.Root, jobID, service)
}

// Start implements Runtime.
func (p *Process) Start(ctx context.Context, spec JobSpec) (Job, error) {
	if err := validate(spec); err != nil {
		return nil, fmt.Errorf("start job %s: %w", spec.ID, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start job %s: %w", spec.ID, err)
	}
	p.mu.Lock()
	if p.jobs[spec.ID] {
		p.mu.Unlock()
		return nil, fmt.Errorf("start job %s: already running", spec.ID)
	}
	p.jobs[spec.ID] = true
	p.mu.Unlock()

	j, err := p.prepare(spec)
	if err != nil {
		p.release(spec.ID)
		return nil, fmt.Errorf("start job %s: %w", spec.ID, err)
	}
	go j.run()
	return j, nil
}

// Close removes the runtime's root and its cgroups' folder if nothing is
// left in them, so that an agent leaves no trace of jobs that ended. Jobs
// still running keep them.
func (p *Process) Close() error {
	p.idleMu.Lock()
	p.shut = true
	if p.trim != nil {
		p.trim.Stop()
	}
	for stopped := false; !stopped; {
		select {
		case sv := <-p.idle:
			_ = sv.stop()
		default:
			stopped = true
		}
	}
	p.idleMu.Unlock()
	if p.uids != nil {
		p.uids.close() // what jobs gave back is cleaned before the agent goes
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.jobs) > 0 {
		return nil
	}
	// Nothing runs, so the records name nothing; the root goes only if
	// empty, which is the point.
	_ = p.rec.close()
	_ = os.Remove(filepath.Join(p.cfg.Root, recordsName))
	_ = os.Remove(p.cfg.Root)
	p.cgroups.prune()
	return nil
}

func (p *Process) release(id string) {
	p.mu.Lock()
	delete(p.jobs, id)
	p.mu.Unlock()
}

// jobUser is who job runs as: the configured user, or a uid of the
// range (release gives it back), or nil for the agent's user.
func (p *Process) jobUser() (*jobUser, error) {
	if p.uids == nil {
		return p.user, nil
	}
	uid, err := p.uids.acquire()
	if err != nil {
		return nil, err
	}
	return &jobUser{name: "levers9-job-" + strconv.FormatUint(uint64(uid), 10), uid: uid, gid: uid, pooled: true}, nil
}

// releaseUser gives back the uid of a job whose working directory is
// deleted; procsGone: its cgroups saw all its processes end.
func (p *Process) releaseUser(u *jobUser, procsGone bool) {
	if u != nil && u.pooled {
		p.uids.release(u.uid, procsGone)
	}
}

// prepare assigns ports, builds environments and working directories.
func (p *Process) prepare(spec JobSpec) (_ *job, err error) {
	ports, err := AssignPorts(spec, ProcessHost)
	if err != nil {
		return nil, err
	}
	u, err := p.jobUser()
	if err != nil {
		return nil, err
	}
	// A working directory left by an earlier attempt the agent did not see
	// to its end goes first.
	jobDir := filepath.Join(p.cfg.Root, spec.ID)
	if err := os.RemoveAll(jobDir); err != nil {
		p.releaseUser(u, true) // nothing ran as it
		return nil, fmt.Errorf("clearing an old working directory: %w", err)
	}
	// Recorded first: a runtime that finds the record deletes the
	// directory.
	slot, err := p.rec.take(spec.ID)
	if err != nil {
		p.releaseUser(u, true)
		return nil, fmt.Errorf("working directory: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(jobDir)
			_ = p.rec.release(slot, len(spec.Services))
			p.releaseUser(u, true) // nothing ran as it
		}
	}()
	if err := mkdirMode(jobDir, 0o711); err != nil {
		return nil, fmt.Errorf("working directory: %w", err)
	}
	addresses := AddressVars(spec, ProcessHost, ports)
	base := os.Environ()
	j := &job{
		id:        spec.ID,
		slot:      slot,
		log:       p.log.With("job", spec.ID),
		grace:     p.cfg.StopGrace,
		timeout:   spec.Timeout,
		events:    make(chan Event, eventBuffer),
		done:      make(chan struct{}),
		remaining: len(spec.Services),
		results:   make([]ServiceResult, len(spec.Services)),
	}
	if u != nil {
		j.log = j.log.With("user", u.String())
	}
	j.onEnd = func() {
		// Every process of the job is gone by now. RemoveAll does not
		// follow the mount links.
		if err := errors.Join(removeWorkDir(jobDir, spec.Services), p.rec.release(slot, len(spec.Services))); err != nil {
			j.log.Warn("deleting the working directory", "err", err)
		}
		p.releaseUser(u, j.procsGone())
		p.release(spec.ID)
	}
	// A job user could not follow links to mounts in places it may not
	// enter: the supervisor binds them instead.
	bound := u != nil && len(p.cfg.Supervisor) > 0
	if bound {
		for _, m := range spec.Mounts {
			if err := ownTree(m.Dir, int(u.uid), int(u.gid)); err != nil {
				return nil, fmt.Errorf("mount %s: giving it to the job user: %w", m.Path, err)
			}
		}
	}
	mkdir := func(dir string) error { return mkdirForUser(dir, u) }
	for i, s := range spec.Services {
		dir := filepath.Join(jobDir, s.Name)
		if err := mkdir(dir); err != nil {
			return nil, fmt.Errorf("service %s: working directory: %w", s.Name, err)
		}
		var binds []supervise.Bind
		if bound {
			binds, err = bindPoints(dir, spec.Mounts, mkdir)
		} else {
			err = linkMounts(dir, spec.Mounts, mkdir)
		}
		if err != nil {
			return nil, fmt.Errorf("service %s: %w", s.Name, err)
		}
		j.services = append(j.services, &service{
			job: j, rt: p, index: i, spec: s, dir: dir, ports: ports[i], drain: p.cfg.DrainTimeout,
			env:   serviceEnv(base, spec.ID, s, dir, addresses, u),
			user:  u,
			binds: binds,
			halt:  make(chan struct{}),
		})
	}
	return j, nil
}

// removeWorkDir deletes job directory dir, with the working directories
// of services. Those a service left empty (as many do) go by one rmdir
// each, where RemoveAll opens and lists every folder; anything in them,
// mount links and bind points included, sends it to RemoveAll, which
// does not follow links.
func removeWorkDir(dir string, services []ServiceSpec) error {
	for _, s := range services {
		if err := syscall.Rmdir(filepath.Join(dir, s.Name)); err != nil && !errors.Is(err, syscall.ENOENT) {
			return os.RemoveAll(dir)
		}
	}
	if err := syscall.Rmdir(dir); err != nil && !errors.Is(err, syscall.ENOENT) {
		return os.RemoveAll(dir)
	}
	return nil
}

// mkdirForUser makes a directory that only the job user u (nil: the
// agent's) may use.
func mkdirForUser(dir string, u *jobUser) error {
	if err := mkdirMode(dir, 0o700); err != nil {
		return err
	}
	if u != nil {
		return os.Lchown(dir, int(u.uid), int(u.gid))
	}
	return nil
}

// mkdirMode makes dir with exactly mode, whatever the umask.
func mkdirMode(dir string, mode os.FileMode) error {
	if err := os.Mkdir(dir, mode); err != nil {
		return err
	}
	return os.Chmod(dir, mode)
}

// stopLeftovers kills the services an earlier agent on this root left
// running (their supervisors are named in Root/.running) and deletes
// their working directories and cgroups, so that a retried attempt never
// runs beside an old one.
func (p *Process) stopLeftovers() error {
	path := filepath.Join(p.cfg.Root, recordsName)
	jobs, err := leftovers(path)
	if err != nil {
		return err
	}
	var errs []error
	for _, j := range jobs {
		for _, s := range j.services {
			// A pid alone may name another process by now.
			if s.started == 0 || supervise.ProcessStart(s.pid) != s.started {
				continue
			}
			p.log.Warn("stopping a service an earlier agent left running", "job", j.id, "service", s.name, "pid", s.pid)
			if err := supervise.KillTree(s.pid, s.pgid, time.Now().Add(30*time.Second)); err != nil {
				errs = append(errs, fmt.Errorf("stopping job %s service %s: %w", j.id, s.name, err))
			}
		}
	}
	// Every service first, then the directories: none is deleted under a
	// process still writing to it.
	for _, j := range jobs {
		if len(j.id) <= 128 && plainName.MatchString(j.id) {
			errs = append(errs, os.RemoveAll(filepath.Join(p.cfg.Root, j.id)))
		}
	}
	errs = append(errs, os.RemoveAll(path), p.cgroups.removeLeftovers())
	return errors.Join(errs...)
}

// leftovers reads the jobs an earlier runtime recorded at path: a records
// file, or the folder agents before it kept (JOB/SERVICE, one pid file
// per service).
func leftovers(path string) ([]leftJob, error) {
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return readRecords(b), nil
	}
	dirs, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var jobs []leftJob
	for _, d := range dirs {
		j := leftJob{id: d.Name()}
		files, _ := os.ReadDir(filepath.Join(path, d.Name()))
		for _, f := range files {
			if pid, started, pgid, ok := readPidFile(filepath.Join(path, d.Name(), f.Name())); ok {
				j.services = append(j.services, leftService{name: f.Name(), pid: pid, started: started, pgid: pgid})
			}
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// readPidFile reads a pid file of an agent before records: "PID START
// PGID".
func readPidFile(file string) (pid int, started uint64, pgid int, ok bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, 0, 0, false
	}
	_, err = fmt.Sscanf(string(b), "%d %d %d", &pid, &started, &pgid)
	return pid, started, pgid, err == nil && pid > 1
}

// Names become directory names: keep them plain. The wire message is
// checked on arrival (names, variables, ports, address variables, fixed
// ports: wire.Start.Validate); these are the checks this runtime's files
// and its need for a command rely on.
var plainName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

func validate(spec JobSpec) error {
	if err := Validate(spec); err != nil {
		return err
	}
	for _, s := range spec.Services {
		if len(s.Command) == 0 {
			return fmt.Errorf("service %s: %w", s.Name, errNoCommand)
		}
	}
	return nil
}
