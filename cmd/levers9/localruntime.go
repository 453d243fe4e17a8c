package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"go.opentelemetry.io/otel/trace"

	"github.com/levers9/levers9/agent"
)

// localNodeConfig is how the built-in node runs jobs (levers9 server
// --local-node-*); serverConfig.check checks it with the rest.
type localNodeConfig struct {
	runtimeConfig
	LogQuota *int64 // bytes of output stored per job attempt; 0: no quota
}

// localRuntime is the built-in node's runtime, chosen before the server
// starts so that an unsafe node stops the server with the reason.
type localRuntime struct {
	*nodeRuntime
	cfg localNodeConfig
	// tracer traces job starts as the agent's (levers9-agent) spans; nil:
	// no tracing.
	tracer trace.Tracer
}

// errUnsafeLocalNode is why no safe runtime is left for the built-in node.
var errUnsafeLocalNode = errors.New("the built-in node cannot run jobs safely here: " +
	"no Docker daemon answers, and running jobs as an unprivileged user needs the server to run as root. " +
	"Start Docker, run the server as root, or run it with --local-node=false and join nodes with levers9 agent")

// prepareLocalNode decides the built-in node's runtime (chooseRuntime,
// never as the server's own user) and makes what it needs. The data
// directory is made the server's own (0700) either way: jobs must not
// read it.
func prepareLocalNode(ctx context.Context, cfg localNodeConfig, dataDir string, log *slog.Logger) (*localRuntime, error) {
	if err := os.Chmod(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	rt, err := chooseRuntime(ctx, cfg.runtimeConfig, localNodeRuntimeFlags, dataDir, false, log)
	if errors.Is(err, errUnprivilegedJobs) {
		return nil, errUnsafeLocalNode
	}
	if err != nil {
		return nil, err
	}
	return &localRuntime{nodeRuntime: rt, cfg: cfg}, nil
}

// serve runs the built-in node's agent on a new runtime until ctx ends or
// the agent stops; the runtime is opened after each join.
func (l *localRuntime) serve(ctx context.Context, stateDir, serverURL string, log *slog.Logger) error {
	rt, err := l.open(ctx, stateDir, log.With("component", "runtime"))
	if err != nil {
		return fmt.Errorf("built-in node: %w", err)
	}
	return serveAgent(ctx, stateDir, serverURL, agent.Declared{}, rt, derefQuota(l.cfg.LogQuota), l.tracer, log)
}
