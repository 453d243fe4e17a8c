package agent

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/wire"
)

// Where a function's container finds what the agent gives it.
const (
	RunnerCodePath   = "/levers9/code"
	RunnerSDKPath    = "/levers9/sdk"
	RunnerRunPath    = "/levers9/run"
	RunnerSocketName = "runner.sock"
)

// maxSocketPath is the longest path of a unix socket (sun_path holds 108
// bytes with the terminating NUL).
const maxSocketPath = 107

// maxRunnerConns bounds the connections one container holds on its
// socket at once: each costs the agent two file descriptors and a stream.
const maxRunnerConns = 256

// runnerHub is the agent's side of every function container's socket:
// the stream tunnel session the connections go through.
type runnerHub struct {
	session atomic.Pointer[yamux.Session] // nil while the stream tunnel is down
}

// runnerJob is one attempt of a function's container: its socket and the
// folder holding it (and, on the process runtime, its copies of the code).
type runnerJob struct {
	jobID    string
	attempt  int
	dir      string // <state>/runners/<random>, removed at the end
	ln       *net.UnixListener
	startAt  time.Time // when the Start arrived: the container was scheduled
	codeAt   time.Time // when the code package was there
	readyAt  time.Time // when the runtime had started the container; set by serve
	log      *slog.Logger
	mu       sync.Mutex
	conns    map[net.Conn]bool
	closed   bool
	serveOne sync.Once
}

// runnersRoot holds one folder per function container. Nobody but the
// agent may list it: a container's folder name is what keeps others from
// its socket.
func (a *Agent) runnersRoot() string {
	root := filepath.Join(a.cfg.StateDir, "runners")
	if len(root)+len("/0123456789abcdef/run/runner.sock") <= maxSocketPath {
		return root
	}
	// A deep state directory leaves no room for a socket's path: the
	// sockets go to a short folder of this state directory's own.
	sum := sha256.Sum256([]byte(a.cfg.StateDir))
	return filepath.Join(os.TempDir(), "levers9-runners-"+hex.EncodeToString(sum[:6]))
}

// prepareRunner readies a function's container: fetches its code, puts
// the code, the levers9 package and a socket to the server into spec's
// mounts and tells its services where they are. The caller closes the
// returned runnerJob when the attempt has ended.
func (a *Agent) prepareRunner(ctx context.Context, m wire.Start, received time.Time, spec *runtime.JobSpec) (_ *runnerJob, err error) {
	code, err := a.codeDir(ctx, m.JobID, m.Runner.CodeHash)
	if err != nil {
		return nil, err
	}
	codeAt := time.Now()
	sdk, err := a.sdkDir()
	if err != nil {
		return nil, fmt.Errorf("writing the levers9 package: %w", err)
	}
	root := a.runnersRoot()
	if err := os.MkdirAll(root, 0o711); err != nil {
		return nil, fmt.Errorf("runner folder: %w", err)
	}
	if err := os.Chmod(root, 0o711); err != nil {
		return nil, fmt.Errorf("runner folder: %w", err)
	}
	var name [8]byte
	_, _ = rand.Read(name[:])
	dir := filepath.Join(root, hex.EncodeToString(name[:]))
	if err := mkdirMode(dir, 0o711); err != nil {
		return nil, fmt.Errorf("runner folder: %w", err)
	}
	rj := &runnerJob{jobID: m.JobID, attempt: max(m.Attempt, 1), dir: dir, startAt: received, codeAt: codeAt, log: a.log.With("job", m.JobID), conns: map[net.Conn]bool{}}
	defer func() {
		if err != nil {
			rj.close()
		}
	}()
	run := filepath.Join(dir, "run")
	if err := mkdirMode(run, 0o711); err != nil {
		return nil, fmt.Errorf("runner folder: %w", err)
	}
	sock := filepath.Join(run, RunnerSocketName)
	if len(sock) > maxSocketPath {
		return nil, fmt.Errorf("the runner socket's path %s is longer than a socket's path may be (%d bytes): use a shorter state directory", sock, maxSocketPath)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("runner socket: %w", err)
	}
	rj.ln = ln
	if err := rj.record(); err != nil {
		return nil, err
	}
	// Whichever user the container runs as connects; only its own
	// container can reach the folder.
	if err := os.Chmod(sock, 0o666); err != nil {
		return nil, fmt.Errorf("runner socket: %w", err)
	}
	process := a.cfg.Runtime.Name() == wire.RuntimeProcess
	if process {
		// The process runtime cannot bind read-only and gives its mounts
		// to the job's user: the container gets copies, the cache stays
		// untouched.
		codeCopy, sdkCopy := filepath.Join(dir, "code"), filepath.Join(dir, "sdk")
		if err := copyTree(code, codeCopy); err != nil {
			return nil, fmt.Errorf("copying the code: %w", err)
		}
		if err := copyTree(sdk, sdkCopy); err != nil {
			return nil, fmt.Errorf("copying the levers9 package: %w", err)
		}
		code, sdk = codeCopy, sdkCopy
	}
	spec.Mounts = append(spec.Mounts,
		runtime.Mount{Path: RunnerCodePath, Dir: code, ReadOnly: true},
		runtime.Mount{Path: RunnerSDKPath, Dir: sdk, ReadOnly: true},
		runtime.Mount{Path: RunnerRunPath, Dir: run},
	)
	// The secrets' values, fetched last (right before the start) and kept
	// in the environment only; the runner's own variables win over them.
	var secretEnv []runtime.EnvVar
	if len(m.Runner.Secrets) > 0 {
		if secretEnv, err = a.secretEnv(ctx, m.JobID); err != nil {
			return nil, err
		}
	}
	wd, _ := a.cfg.Runtime.(workDirs)
	for i, s := range spec.Services {
		at := "/" // a container runtime binds the mounts at their paths
		if process {
			at = "" // relative to the working directory
			if wd != nil {
				at = wd.WorkDir(spec.ID, s.Name) + "/"
			}
		}
		spec.Services[i].SystemEnv = append(spec.Services[i].SystemEnv, secretEnv...)
		spec.Services[i].SystemEnv = append(spec.Services[i].SystemEnv, runnerEnv(m.Runner, at)...)
	}
	return rj, nil
}

// workDirs is a runtime that puts mounts below each service's working
// directory (the process runtime) and says where that is.
type workDirs interface {
	WorkDir(jobID, service string) string
}

// runnerEnv tells the runner where things are: the mounts' paths with
// their leading slash replaced by at, where they are seen from the
// service ("/" in a container, the working directory on the process
// runtime, or "" for paths relative to it when the runtime does not say
// where it is: Python makes PYTHONPATH's absolute at startup, the runner
// must do so with the socket's before it changes directory).
func runnerEnv(r *wire.Runner, at string) []runtime.EnvVar {
	code := at + RunnerCodePath[1:]
	sdk := at + RunnerSDKPath[1:]
	sock := at + RunnerRunPath[1:] + "/" + RunnerSocketName
	if len(sock) > maxSocketPath {
		// Too long to connect to: relative to the working directory.
		sock = RunnerRunPath[1:] + "/" + RunnerSocketName
	}
	return []runtime.EnvVar{
		{Name: "PYTHONPATH", Value: sdk + ":" + code},
		{Name: "PYTHONUNBUFFERED", Value: "1"},
		{Name: "PYTHONDONTWRITEBYTECODE", Value: "1"},
		{Name: "LEVERS9_RUNNER_SOCKET", Value: sock},
		{Name: "LEVERS9_CONTAINER_ID", Value: r.ContainerID},
		{Name: "LEVERS9_FUNCTION_ID", Value: r.FunctionID},
	}
}

// mkdirMode makes dir with exactly mode, whatever the umask.
func mkdirMode(dir string, mode os.FileMode) error {
	if err := os.Mkdir(dir, mode); err != nil {
		return err
	}
	return os.Chmod(dir, mode)
}

// runnerStarted starts serving t's socket, if it is a function's
// container, now that the runtime has started it: connections made
// meanwhile waited in the socket's backlog.
func (a *Agent) runnerStarted(t *task) {
	t.mu.Lock()
	rj := t.runner
	t.mu.Unlock()
	if rj != nil {
		rj.serveOne.Do(func() {
			rj.readyAt = time.Now()
			if err := rj.record(); err != nil {
				rj.log.Warn("recording a function container's socket", "err", err)
			}
			go a.acceptRunner(rj)
		})
	}
}

func (a *Agent) acceptRunner(rj *runnerJob) {
	slots := make(chan struct{}, maxRunnerConns)
	for {
		c, err := rj.ln.AcceptUnix()
		if err != nil {
			return // closed at the job's end
		}
		select {
		case slots <- struct{}{}:
		default:
			rj.log.Warn("a function container has too many connections open to the server; refusing one", "most", maxRunnerConns)
			_ = c.Close()
			continue
		}
		if !rj.track(c) {
			<-slots
			return
		}
		go func() {
			defer func() { rj.untrack(c); <-slots }()
			a.serveRunnerConn(rj, c)
		}()
	}
}

// serveRunnerConn carries one connection of a runner to the server over
// a stream of the stream tunnel; without one the connection is closed and
// the runner tries again.
func (a *Agent) serveRunnerConn(rj *runnerJob, c *net.UnixConn) {
	defer c.Close()
	ys := a.runners.session.Load()
	if ys == nil || ys.IsClosed() {
		return
	}
	st, err := ys.OpenStream()
	if err != nil {
		return
	}
	defer st.Close()
	_ = st.SetDeadline(time.Now().Add(streamHeaderTimeout))
	open := wire.RunnerOpen{JobID: rj.jobID, Attempt: rj.attempt, ScheduledAt: rj.startAt, CodeFetchedAt: rj.codeAt, ImageReadyAt: rj.readyAt}
	if err := wire.WriteHeader(st, open); err != nil {
		return
	}
	var reply wire.StreamReply
	if err := wire.ReadHeader(st, &reply); err != nil {
		rj.log.Warn("the server did not answer a runner's connection", "err", err)
		return
	}
	if reply.Error != "" {
		rj.log.Warn("the server refused a runner's connection", "code", reply.Code, "err", reply.Error)
		return
	}
	_ = st.SetDeadline(time.Time{})
	pipe(st, c)
}

func (rj *runnerJob) track(c net.Conn) bool {
	rj.mu.Lock()
	defer rj.mu.Unlock()
	if rj.closed {
		_ = c.Close()
		return false
	}
	rj.conns[c] = true
	return true
}

func (rj *runnerJob) untrack(c net.Conn) {
	rj.mu.Lock()
	defer rj.mu.Unlock()
	delete(rj.conns, c)
}

// close ends the socket and its connections and removes the container's
// folder. Safe on nil and more than once.
func (rj *runnerJob) close() {
	if rj == nil {
		return
	}
	rj.mu.Lock()
	if rj.closed {
		rj.mu.Unlock()
		return
	}
	rj.closed = true
	for c := range rj.conns {
		_ = c.Close()
	}
	rj.mu.Unlock()
	if rj.ln != nil {
		_ = rj.ln.Close()
	}
	if err := os.RemoveAll(rj.dir); err != nil {
		rj.log.Warn("removing a function container's folder", "err", err, "dir", rj.dir)
	}
}

// runnerFile, in a container's runner folder (not the part bound into
// it), says whose it is: an agent that restarts takes the socket of a
// container it finds running over again.
const runnerFile = "runner.json"

type runnerRecord struct {
	JobID         string    `json:"jobId"`
	Attempt       int       `json:"attempt"`
	ScheduledAt   time.Time `json:"scheduledAt,omitzero"`
	CodeFetchedAt time.Time `json:"codeFetchedAt,omitzero"`
	ImageReadyAt  time.Time `json:"imageReadyAt,omitzero"`
}

func (rj *runnerJob) record() error {
	b, err := json.Marshal(runnerRecord{JobID: rj.jobID, Attempt: rj.attempt, ScheduledAt: rj.startAt, CodeFetchedAt: rj.codeAt, ImageReadyAt: rj.readyAt})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(rj.dir, runnerFile), b, 0o600); err != nil {
		return fmt.Errorf("recording the runner socket: %w", err)
	}
	return nil
}

// recoverRunners listens again on the sockets of the function containers
// an earlier agent left running (jobs: their attempts by job ID), whose
// runners retry meanwhile, and removes every other runner folder: what an
// agent that died left. The sockets are served at once.
func (a *Agent) recoverRunners(jobs map[string]int) map[string]*runnerJob {
	root := a.runnersRoot()
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	out := map[string]*runnerJob{}
	for _, e := range ents {
		dir := filepath.Join(root, e.Name())
		var rec runnerRecord
		b, err := os.ReadFile(filepath.Join(dir, runnerFile))
		if err == nil {
			err = json.Unmarshal(b, &rec)
		}
		if err == nil && rec.JobID != "" && jobs[rec.JobID] == rec.Attempt && out[rec.JobID] == nil {
			rj := &runnerJob{jobID: rec.JobID, attempt: rec.Attempt, dir: dir, startAt: rec.ScheduledAt, codeAt: rec.CodeFetchedAt, readyAt: rec.ImageReadyAt,
				log: a.log.With("job", rec.JobID), conns: map[net.Conn]bool{}}
			if err := rj.relisten(); err != nil {
				a.log.Warn("a function container found running has no socket to the server", "job", rec.JobID, "err", err)
				rj.close()
				continue
			}
			rj.serveOne.Do(func() { go a.acceptRunner(rj) })
			out[rec.JobID] = rj
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			a.log.Warn("removing a runner folder left behind", "dir", dir, "err", err)
		}
	}
	return out
}

// relisten replaces the dead socket of an earlier agent: the container
// has the folder bound, so it sees the new one.
func (rj *runnerJob) relisten() error {
	sock := filepath.Join(rj.dir, "run", RunnerSocketName)
	if err := os.Remove(sock); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return err
	}
	rj.ln = ln
	return os.Chmod(sock, 0o666)
}
