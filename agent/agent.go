package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/wire"
)

// Config configures a running agent.
type Config struct {
	// Server overrides the server URL stored at join time.
	Server    string
	StateDir  string
	Inventory wire.Inventory // what the node offers (declared or detected)
	Runtime   runtime.Runtime
	Version   string       // reported to the server; default "dev"
	Log       *slog.Logger // nil: discard
	Client    *http.Client // nil: http.DefaultClient
	// OnConnect, when set, is called after each Welcome (tests, status).
	OnConnect func()
	// LogQuota is the most bytes of output (a newline counted per line)
	// stored per job attempt; later lines are dropped and the log says
	// which. 0: no quota.
	LogQuota int64
	// MaxStreams bounds the relayed connections and terminals open on the
	// node at once, so no user can spend its file descriptors and
	// goroutines; 0: DefaultMaxStreams.
	MaxStreams int
	// Tracer, when set, traces the start of each job (agent.start and its
	// steps), in the job's trace when the server sent one; nil: off.
	Tracer trace.Tracer
}

// DefaultMaxStreams is Config.MaxStreams's default.
const DefaultMaxStreams = 1024

// Reconnect backoff: jittered (see jittered), doubling, capped, and back
// to the start after a session that lasted. The cap is low so that after
// a server outage every agent is back within a few seconds of the server
// answering, well inside the node TTL its liveness sweep allows; the
// jitter, not a long wait, keeps agents that failed together from
// retrying together.
const (
	minBackoff = 500 * time.Millisecond
	maxBackoff = 5 * time.Second
	// stableAfter is how long a session must last for the backoff to reset.
	stableAfter = 30 * time.Second
)

// ErrCredentialRefused means the server no longer accepts this node.
var ErrCredentialRefused = errors.New("the server refused the node credential (revoked or unknown): join again with a new invite")

// Agent is a running node agent.
type Agent struct {
	cfg   Config
	st    *State
	log   *slog.Logger
	tasks tasks
	out   *outbox
	// exiting is set when the agent ends leaving its jobs running for the
	// next one (a Recoverer runtime): their ends are not this agent's to
	// report or clean up.
	exiting atomic.Bool
	// code caches the code packages of function containers; runners
	// carries their sockets' connections to the server.
	code    codeCache
	runners runnerHub
	// fence freezes the jobs while the server is out of reach too long.
	fence *fence
}

// Run connects to the server with the identity in cfg.StateDir and serves
// it until ctx ends or the server refuses the node, reconnecting with
// jittered, capped backoff. Jobs keep running across reconnects; their
// reports wait in order.
func Run(ctx context.Context, cfg Config) error {
	st, err := LoadState(cfg.StateDir)
	if err != nil {
		return err
	}
	if cfg.Server != "" {
		st.Server = cfg.Server
	}
	if cfg.Runtime == nil {
		return errors.New("agent: a runtime is required")
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	cfg.Inventory.Runtime = cfg.Runtime.Name()
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Agent{cfg: cfg, st: st, log: log.With("node", st.NodeID), tasks: tasks{m: map[string]*task{}}, out: newOutbox(), fence: newFence(filepath.Join(cfg.StateDir, FenceFile))}
	a.out.onSent = a.forgetIfDone
	if src, ok := cfg.Runtime.(runtime.ImageSource); ok {
		src.SetImageFetcher(a.fetchImage) // blueprint images come from the server
	}
	if rc, ok := cfg.Runtime.(runtime.Recoverer); ok {
		// Before the first hello, so it lists them and the server's
		// Reconcile says which to resume.
		if err := a.recover(ctx, rc); err != nil {
			return err
		}
	} else {
		a.recoverRunners(nil) // what an agent that died left
	}
	defer a.stopAll()
	fctx, stopFencing := context.WithCancel(ctx)
	defer stopFencing()
	go a.fencing(fctx)

	b := jittered(minBackoff, maxBackoff)
	_, err = backoff.Retry(ctx, func() (struct{}, error) {
		began := time.Now()
		err := a.session(ctx)
		if errors.Is(err, ErrCredentialRefused) {
			return struct{}{}, backoff.Permanent(err)
		}
		if time.Since(began) > stableAfter {
			b.Reset()
		}
		if err == nil {
			err = errors.New("tunnel closed")
		}
		return struct{}{}, err
	}, backoff.WithBackOff(b), backoff.WithMaxElapsedTime(0), backoff.WithNotify(func(err error, wait time.Duration) {
		a.log.Warn("tunnel closed; reconnecting", "err", err, "in", wait.Round(time.Millisecond))
	}))
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// recover takes over the jobs an earlier agent left running. They stay
// silent until the server's Reconcile resumes or stops them.
func (a *Agent) recover(ctx context.Context, rc runtime.Recoverer) error {
	found, err := rc.Recover(ctx)
	if err != nil {
		return fmt.Errorf("finding the jobs an earlier agent left running: %w", err)
	}
	attempts := map[string]int{}
	for _, r := range found {
		attempts[r.ID()] = max(r.Attempt(), 1)
	}
	runners := a.recoverRunners(attempts)
	a.tasks.mu.Lock()
	defer a.tasks.mu.Unlock()
	for _, r := range found {
		id := r.ID()
		t := newTask(r.Attempt(), r.StartedAt())
		t.job, t.recovered = r, r
		t.mounts = a.loadMounts(id)
		t.runner = runners[id]
		for _, name := range r.Services() {
			t.services[name] = &wire.RunningService{JobID: id, Service: name, Attempt: t.attempt, StartedAt: t.received}
		}
		a.tasks.m[id] = t
		a.log.Info("found a job left running", "job", id, "attempt", t.attempt, "services", len(t.services))
		go a.forward(id, t, r)
	}
	return nil
}

// stopAll runs when the agent ends. With a runtime whose jobs outlive the
// agent (containers), they go on and the next agent reattaches to them;
// otherwise every job is stopped: services do not outlive the agent (the
// server fails them when the agent comes back without them).
func (a *Agent) stopAll() {
	// Nothing sends from here on: jobs waiting for room in the outbox
	// must not hold up their stop.
	a.out.close()
	if _, ok := a.cfg.Runtime.(runtime.Recoverer); ok {
		a.exiting.Store(true)
		a.log.Info("agent stopping; its jobs keep running for the next agent", "services", len(a.tasks.running()))
		return
	}
	a.tasks.mu.Lock()
	var jobs []runtime.Job
	for _, t := range a.tasks.m {
		t.mu.Lock()
		if t.job != nil {
			jobs = append(jobs, t.job)
		}
		t.mu.Unlock()
	}
	a.tasks.mu.Unlock()
	for _, j := range jobs {
		j.Stop("agent stopped", 5*time.Second)
	}
	for _, j := range jobs {
		select {
		case <-j.Done():
		case <-time.After(10 * time.Second):
			a.log.Warn("job did not stop in time", "job", j.ID())
		}
	}
}
