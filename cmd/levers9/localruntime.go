package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/levers9/levers9/agent"
	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/agent/runtime/docker"
	"github.com/levers9/levers9/internal/wire"
)

// localNodeConfig is how the built-in node runs jobs (levers9 server
// --local-node-*).
type localNodeConfig struct {
	Runtime      string // auto, docker or process
	DefaultImage string // Docker: the image of command-only services
	WorkDir      string // process: the jobs' working directories; "" for jobWorkDir's default
	JobUIDs      string // process: FIRST:COUNT, the uids jobs run as, one per job
	LogQuota     *int64 // bytes of output stored per job attempt; 0: no quota
}

// defaultJobUIDs are the uids of the built-in node's jobs on the process
// runtime unless configured, one per running job: in the space no one
// allocates, above accounts (useradd stops at 60000), systemd's dynamic
// users and its container range (up to 1879048191), below 2^31. Built-in
// nodes of several servers on one machine share them safely.
const defaultJobUIDs = "1900000000:65536"

// localWorkBase holds the process runtime's working directories of every
// built-in node on the machine, one folder per data directory.
const localWorkBase = "/var/lib/levers9"

// localRuntime is the built-in node's runtime, chosen before the server
// starts so that an unsafe node stops the server with the reason.
type localRuntime struct {
	kind    string // docker or process
	cfg     localNodeConfig
	workDir string // process
	uids    runtime.UIDRange
}

// errUnsafeLocalNode is why no safe runtime is left for the built-in node.
var errUnsafeLocalNode = errors.New("the built-in node cannot run jobs safely here: " +
	"no Docker daemon answers, and running jobs as an unprivileged user needs the server to run as root. " +
	"Start Docker, run the server as root, or run it with --local-node=false and join nodes with levers9 agent")

// prepareLocalNode decides the built-in node's runtime and makes what it
// needs: Docker when asked or when a daemon answers (auto); else the
// process runtime, which runs every job as a uid of its own from
// cfg.JobUIDs, in a work directory outside dataDir. The data directory is
// made the server's own (0700) either way: jobs must not read it.
func prepareLocalNode(ctx context.Context, cfg localNodeConfig, dataDir string, log *slog.Logger) (*localRuntime, error) {
	if err := os.Chmod(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	rt := &localRuntime{kind: cfg.Runtime, cfg: cfg}
	switch cfg.Runtime {
	case runtimeAuto:
		rt.kind = wire.RuntimeProcess
		if docker.Available(ctx, "") {
			rt.kind = wire.RuntimeDocker
		}
	case wire.RuntimeDocker, wire.RuntimeProcess:
	default:
		return nil, fmt.Errorf("--local-node-runtime %q: must be auto, docker or process", cfg.Runtime)
	}
	if rt.kind == wire.RuntimeDocker {
		if strings.TrimSpace(cfg.DefaultImage) == "" {
			return nil, errors.New("--local-node-default-image must name an image")
		}
		log.Info("built-in node runs jobs in Docker containers", "defaultImage", cfg.DefaultImage)
		return rt, nil
	}
	if os.Geteuid() != 0 {
		return nil, errUnsafeLocalNode
	}
	uids, err := parseJobUIDs(cfg.JobUIDs)
	if err != nil {
		return nil, fmt.Errorf("--local-node-job-uids: %w", err)
	}
	work, err := jobWorkDir(cfg.WorkDir, dataDir)
	if err != nil {
		return nil, err
	}
	rt.workDir, rt.uids = work, uids
	log.Info("built-in node runs jobs as child processes, each as a uid of its own", "uids", fmt.Sprintf("%d-%d", uids.First, uids.Last()), "workDir", work)
	return rt, nil
}

// parseJobUIDs is the uid range s names (empty: defaultJobUIDs), checked
// against the machine's accounts.
func parseJobUIDs(s string) (runtime.UIDRange, error) {
	uids, err := runtime.ParseUIDRange(cmp.Or(s, defaultJobUIDs))
	if err == nil {
		err = runtime.CheckUIDs(uids)
	}
	return uids, err
}

// jobWorkDir is the process runtime's root for a node whose private
// directory (the server's data directory, an agent's state directory) is
// dataDir: dir, or one named after dataDir under localWorkBase. It must
// lie outside dataDir, which job uids cannot enter.
func jobWorkDir(dir, dataDir string) (string, error) {
	if dir == "" {
		sum := sha256.Sum256([]byte(dataDir))
		dir = filepath.Join(localWorkBase, "jobs-"+hex.EncodeToString(sum[:6]))
		// Others may pass through to their job's folder, never list.
		if err := os.MkdirAll(localWorkBase, 0o711); err != nil {
			return "", fmt.Errorf("work directory: %w", err)
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("work directory: %w", err)
	}
	if rel, err := filepath.Rel(dataDir, dir); err == nil && (rel == "." || !strings.HasPrefix(rel, "..")) {
		return "", fmt.Errorf("work directory %s is inside %s, which jobs may not enter; choose a directory outside it", dir, dataDir)
	}
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return "", fmt.Errorf("work directory: %w", err)
	}
	return dir, nil
}

// serve runs the built-in node's agent on a new runtime until ctx ends or
// the agent stops. The Docker runtime is made per node ID (its labels
// carry it), so after each join.
func (l *localRuntime) serve(ctx context.Context, stateDir, serverURL string, log *slog.Logger) error {
	rlog := log.With("component", "runtime")
	var rt runtime.Runtime
	switch l.kind {
	case wire.RuntimeDocker:
		st, err := agent.LoadState(stateDir)
		if err != nil {
			return err
		}
		d, err := docker.New(ctx, docker.Config{NodeID: st.NodeID, DefaultImage: l.cfg.DefaultImage, Logger: rlog})
		if err != nil {
			return fmt.Errorf("built-in node: %w", err)
		}
		rt = d
	default:
		p, err := newProcessRuntime(l.workDir, l.uids, rlog)
		if err != nil {
			return fmt.Errorf("built-in node: %w", err)
		}
		rt = p
	}
	return serveAgent(ctx, stateDir, serverURL, agent.Declared{}, rt, derefQuota(l.cfg.LogQuota), log)
}
