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

// Runtime choices of a node: levers9 agent --runtime and levers9 server
// --local-node-runtime.
const (
	runtimeAuto = "auto"
	// defaultImage runs command-only services on Docker unless the
	// default image flag names another.
	defaultImage = "debian:stable-slim"
	// defaultJobUIDs are the uids of jobs on the process runtime as root
	// unless configured, one per running job: in the space no one
	// allocates, above accounts (useradd stops at 60000), systemd's
	// dynamic users and its container range (up to 1879048191), below
	// 2^31. Nodes of several servers and agents on one machine share them
	// safely.
	defaultJobUIDs = "1900000000:65536"
	// localWorkBase holds the process runtime's working directories of
	// every node on the machine that is not told where, one folder per
	// private directory.
	localWorkBase = "/var/lib/levers9"
)

// runtimeConfig is how a node runs services, as the agent's flags or the
// server's --local-node-* flags say.
type runtimeConfig struct {
	Runtime      string // auto, docker or process
	DefaultImage string // Docker: the image of command-only services
	WorkDir      string // process: the jobs' working directories; "" for jobWorkDir's default
	JobUIDs      string // process as root: FIRST:COUNT, the uids jobs run as, one per job; "" for defaultJobUIDs
}

// runtimeFlags names the flags of a runtimeConfig in messages: "--" for
// the agent's (--runtime), "--local-node-" for the built-in node's.
type runtimeFlags string

const (
	agentRuntimeFlags     runtimeFlags = "--"
	localNodeRuntimeFlags runtimeFlags = "--local-node-"
)

func (f runtimeFlags) name(flag string) string { return string(f) + flag }

// check refuses a runtime that is not auto, docker or process, and Docker
// (or auto, which may become Docker) without a default image.
func (r runtimeConfig) check(flags runtimeFlags) error {
	switch r.Runtime {
	case runtimeAuto, wire.RuntimeDocker, wire.RuntimeProcess:
	default:
		return fmt.Errorf("%s %q: must be auto, docker or process", flags.name("runtime"), r.Runtime)
	}
	if r.Runtime != wire.RuntimeProcess && strings.TrimSpace(r.DefaultImage) == "" {
		return fmt.Errorf("%s must name an image", flags.name("default-image"))
	}
	return nil
}

// errUnprivilegedJobs is why the process runtime refuses to run jobs as
// an unprivileged node's own user.
var errUnprivilegedJobs = errors.New("running jobs as an unprivileged user needs the node to run as root")

// nodeRuntime is the runtime chosen for a node, and what the process
// runtime needs, decided before the node starts so that a bad choice
// stops it with the reason.
type nodeRuntime struct {
	kind    string // docker or process
	image   string // docker
	workDir string // process
	uids    runtime.UIDRange
}

// chooseRuntime decides the runtime r asks for (checked with check) for a
// node whose private directory (the agent's state directory, the server's
// data directory) is privateDir: Docker when asked or when a daemon
// answers (auto); else the process runtime. As root the process runtime
// runs every job as a uid of its own from r.JobUIDs, in a work directory
// outside privateDir. Not as root, jobs run as this user only when
// asUser allows it (an agent on a trusted single-user machine, with a
// warning); otherwise chooseRuntime fails with errUnprivilegedJobs.
func chooseRuntime(ctx context.Context, r runtimeConfig, flags runtimeFlags, privateDir string, asUser bool, log *slog.Logger) (*nodeRuntime, error) {
	if err := r.check(flags); err != nil {
		return nil, err
	}
	rt := &nodeRuntime{kind: r.Runtime, image: r.DefaultImage}
	if rt.kind == runtimeAuto {
		rt.kind = wire.RuntimeProcess
		if docker.Available(ctx, "") {
			rt.kind = wire.RuntimeDocker
		}
	}
	if rt.kind == wire.RuntimeDocker {
		log.Info("jobs run in Docker containers", "defaultImage", r.DefaultImage)
		return rt, nil
	}
	if os.Geteuid() != 0 {
		if !asUser {
			return nil, errUnprivilegedJobs
		}
		if r.JobUIDs != "" {
			return nil, fmt.Errorf("%s: %w", flags.name("job-uids"), errUnprivilegedJobs)
		}
		log.Warn("the process runtime runs jobs as this agent's user: they can read what it can, the node credential included; " +
			"on a machine others submit to use --runtime docker or run the agent as root")
		rt.workDir = cmp.Or(r.WorkDir, filepath.Join(privateDir, "jobs"))
		return rt, nil
	}
	uids, err := parseJobUIDs(r.JobUIDs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flags.name("job-uids"), err)
	}
	work, err := jobWorkDir(r.WorkDir, privateDir)
	if err != nil {
		return nil, err
	}
	rt.workDir, rt.uids = work, uids
	log.Info("jobs run as child processes, each as a uid of its own", "uids", fmt.Sprintf("%d-%d", uids.First, uids.Last()), "workDir", work)
	return rt, nil
}

// open makes the runtime for the node joined in stateDir: the Docker
// runtime is made per node ID (its labels carry it), so after the join.
func (n *nodeRuntime) open(ctx context.Context, stateDir string, log *slog.Logger) (runtime.Runtime, error) {
	if n.kind == wire.RuntimeDocker {
		st, err := agent.LoadState(stateDir)
		if err != nil {
			return nil, err
		}
		rt, err := docker.New(ctx, docker.Config{NodeID: st.NodeID, DefaultImage: n.image, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("docker runtime: %w", err)
		}
		return rt, nil
	}
	sup, err := supervisorArgv()
	if err != nil {
		return nil, err
	}
	return runtime.NewProcess(runtime.ProcessConfig{Root: n.workDir, UIDs: n.uids, Supervisor: sup, Logger: log})
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
