package agent

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

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
}

// Reconnect backoff.
const (
	minBackoff = 500 * time.Millisecond
	maxBackoff = 30 * time.Second
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
}

// Run connects to the server with the identity in cfg.StateDir and serves
// it until ctx ends, reconnecting with jittered, capped backoff. Jobs keep
// running across reconnects; their reports wait in order.
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
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Agent{cfg: cfg, st: st, log: log.With("node", st.NodeID), tasks: tasks{m: map[string]*task{}}, out: newOutbox()}
	a.out.onSent = a.forgetIfDone
	defer a.stopAll()

	backoff := minBackoff
	for {
		began := time.Now()
		err := a.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrCredentialRefused) {
			return err
		}
		if time.Since(began) > stableAfter {
			backoff = minBackoff
		}
		// Full jitter between half and all of the backoff, so a server
		// restart is not met by every agent at once.
		wait := backoff/2 + rand.N(backoff/2+1)
		a.log.Warn("tunnel closed; reconnecting", "err", err, "in", wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

// stopAll stops every job when the agent ends: services do not outlive
// the agent (the server fails them when the agent comes back without them).
func (a *Agent) stopAll() {
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
