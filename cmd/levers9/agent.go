package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/levers9/levers9/agent"
	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/agent/runtime/docker"
	"github.com/levers9/levers9/internal/wire"
)

// agentFlags are the flags of `levers9 agent` and `levers9 agent join`.
type agentFlags struct {
	server, stateDir, logLevel string
	gpu, memory                string
	cpus                       float64
	runtime, defaultImage      string
	workDir, jobUIDs           string // process runtime
	logQuota                   *int64
	// join only
	invite, name string
}

func defaultStateDir() string {
	if d := os.Getenv("LEVERS9_AGENT_STATE_DIR"); d != "" {
		return d
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".levers9", "agent")
	}
	return "levers9-agent"
}

func (f *agentFlags) register(fs *flag.FlagSet, join bool) {
	fs.StringVar(&f.server, "server", os.Getenv("LEVERS9_SERVER"), "server URL (LEVERS9_SERVER); default: the one joined")
	fs.StringVar(&f.stateDir, "state-dir", defaultStateDir(), "where the node identity and job directories live (LEVERS9_AGENT_STATE_DIR)")
	fs.StringVar(&f.logLevel, "log-level", env("LEVERS9_LOG_LEVEL", "info"), "debug, info, warn or error")
	fs.StringVar(&f.gpu, "gpu", "", "declare GPUs instead of detecting them: TYPE:COUNT[,TYPE:COUNT…], e.g. H100:8")
	fs.Float64Var(&f.cpus, "cpus", 0, "declare the CPUs instead of detecting them")
	fs.StringVar(&f.memory, "memory", "", "declare the memory instead of detecting it, e.g. 256GiB")
	fs.StringVar(&f.runtime, "runtime", env("LEVERS9_AGENT_RUNTIME", runtimeAuto),
		"how services run: docker (containers), process (child processes, for trusted machines) or auto (Docker when a daemon answers) (LEVERS9_AGENT_RUNTIME)")
	fs.StringVar(&f.defaultImage, "default-image", env("LEVERS9_AGENT_DEFAULT_IMAGE", defaultImage),
		"on Docker, the image of services that give a command but no image (LEVERS9_AGENT_DEFAULT_IMAGE)")
	fs.StringVar(&f.workDir, "work-dir", env("LEVERS9_AGENT_WORK_DIR", ""),
		"process runtime: where job directories live, outside the state directory; default "+localWorkBase+"/jobs-HASH as root, else STATE_DIR/jobs (LEVERS9_AGENT_WORK_DIR)")
	f.logQuota = logQuotaFlag(fs, "job-log-quota", "this node")
	fs.StringVar(&f.jobUIDs, "job-uids", env("LEVERS9_AGENT_JOB_UIDS", ""),
		"process runtime as root: FIRST:COUNT, the uids jobs run as, one per running job; default "+defaultJobUIDs+" (LEVERS9_AGENT_JOB_UIDS)")
	if join {
		fs.StringVar(&f.invite, "invite", "", "the invite code (required)")
		fs.StringVar(&f.name, "name", "", "node name; default: the invite's, else the host name")
	}
}

func (f *agentFlags) declared() (agent.Declared, error) {
	var d agent.Declared
	if f.cpus < 0 {
		return d, fmt.Errorf("--cpus must not be negative")
	}
	d.CPUs = f.cpus
	if f.memory != "" {
		m, err := agent.ParseMemory(f.memory)
		if err != nil {
			return d, err
		}
		d.MemoryMiB = m
	}
	if f.gpu != "" {
		g, err := agent.ParseGPUs(f.gpu)
		if err != nil {
			return d, err
		}
		d.GPUs = g
	}
	return d, nil
}

// runAgent is `levers9 agent [join] …`.
func runAgent(ctx context.Context, args []string, stderr io.Writer) int {
	join := len(args) > 0 && args[0] == "join"
	name := "levers9 agent"
	if join {
		args, name = args[1:], "levers9 agent join"
	}
	var f agentFlags
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.register(fs, join)
	if err := fs.Parse(args); err != nil {
		return usageExit(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", name, fs.Arg(0))
		return exitUsage
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		fmt.Fprintf(stderr, "%s: --log-level: %v\n", name, err)
		return exitUsage
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	decl, err := f.declared()
	if err == nil {
		err = checkRuntime(f.runtime, f.defaultImage)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitUsage
	}
	if join {
		if f.server == "" || f.invite == "" {
			fmt.Fprintf(stderr, "%s: --server and --invite are required\n", name)
			return exitUsage
		}
		st, err := agent.Join(ctx, agent.JoinConfig{
			Server: f.server, Invite: f.invite, Name: f.name, StateDir: f.stateDir,
			Inventory: decl.Apply(agent.DetectInventory(ctx)), Declared: decl, Version: version,
		})
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return exitError
		}
		log.Info("joined", "node", st.NodeID, "name", st.Name, "server", st.Server, "state", filepath.Join(f.stateDir, agent.StateFile))
	}
	rt, err := newRuntime(ctx, f, log)
	if err == nil {
		err = serveAgent(ctx, f.stateDir, f.server, decl, rt, *f.logQuota, log)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitError
	}
	return exitOK
}

// Runtime choices of `levers9 agent --runtime`.
const (
	runtimeAuto = "auto"
	// defaultImage runs command-only services on Docker unless
	// --default-image names another.
	defaultImage = "debian:stable-slim"
)

func checkRuntime(kind, image string) error {
	switch kind {
	case runtimeAuto, wire.RuntimeDocker, wire.RuntimeProcess:
	default:
		return fmt.Errorf("--runtime %q: must be auto, docker or process", kind)
	}
	if kind != wire.RuntimeProcess && strings.TrimSpace(image) == "" {
		return errors.New("--default-image must name an image")
	}
	return nil
}

// newRuntime makes the runtime f asks for for the node in its state
// directory: Docker (auto: when a daemon answers) or child processes.
func newRuntime(ctx context.Context, f agentFlags, log *slog.Logger) (runtime.Runtime, error) {
	kind, image, stateDir := f.runtime, f.defaultImage, f.stateDir
	if kind == runtimeAuto {
		kind = wire.RuntimeProcess
		if docker.Available(ctx, "") {
			kind = wire.RuntimeDocker
		}
	}
	log = log.With("component", "runtime")
	if kind == wire.RuntimeProcess {
		return processRuntime(stateDir, f.workDir, f.jobUIDs, log)
	}
	st, err := agent.LoadState(stateDir)
	if err != nil {
		return nil, err
	}
	rt, err := docker.New(ctx, docker.Config{NodeID: st.NodeID, DefaultImage: image, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("--runtime docker: %w", err)
	}
	return rt, nil
}

// processRuntime runs services as child processes under this binary's
// supervisor (they die with the agent). As root every job runs as a uid
// of its own from jobUIDs, in a work directory outside the 0700 state
// directory (which holds the node credential); otherwise jobs run as the
// agent's user, which only a trusted single-user machine should accept.
func processRuntime(stateDir, workDir, jobUIDs string, log *slog.Logger) (runtime.Runtime, error) {
	if os.Geteuid() != 0 {
		if jobUIDs != "" {
			return nil, errors.New("--job-uids: running jobs as other users needs the agent to run as root")
		}
		log.Warn("the process runtime runs jobs as this agent's user: they can read what it can, the node credential included; " +
			"on a machine others submit to use --runtime docker or run the agent as root")
		return newProcessRuntime(cmp.Or(workDir, filepath.Join(stateDir, "jobs")), runtime.UIDRange{}, log)
	}
	uids, err := parseJobUIDs(jobUIDs)
	if err != nil {
		return nil, fmt.Errorf("--job-uids: %w", err)
	}
	root, err := jobWorkDir(workDir, stateDir)
	if err != nil {
		return nil, err
	}
	return newProcessRuntime(root, uids, log)
}

// newProcessRuntime is the process runtime rooted at root, under this
// binary's supervisor, running jobs as uids (none: as the agent's user).
func newProcessRuntime(root string, uids runtime.UIDRange, log *slog.Logger) (*runtime.Process, error) {
	sup, err := supervisorArgv()
	if err != nil {
		return nil, err
	}
	return runtime.NewProcess(runtime.ProcessConfig{Root: root, UIDs: uids, Supervisor: sup, Logger: log})
}

// serveAgent runs the agent of the node in stateDir with rt until ctx
// ends. A runtime that holds a connection is
// closed at the end; the containers it runs keep running for the next
// agent.
func serveAgent(ctx context.Context, stateDir, server string, decl agent.Declared, rt runtime.Runtime, logQuota int64, log *slog.Logger) error {
	st, err := agent.LoadState(stateDir)
	if err != nil {
		return err
	}
	if c, ok := rt.(io.Closer); ok {
		defer c.Close()
	}
	inv := st.Declared.Merge(decl).Apply(agent.DetectInventory(ctx))
	log.Info("agent starting", "node", st.NodeID, "server", strings.TrimSpace(firstOf(server, st.Server)),
		"runtime", rt.Name(), "cpus", inv.CPUs, "memoryMiB", inv.MemoryMiB, "gpus", inv.GPUs)
	return agent.Run(ctx, agent.Config{
		Server: server, StateDir: stateDir, Inventory: inv, Runtime: rt, Version: version, Log: log, LogQuota: logQuota,
	})
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// sizeValue is a flag holding a size in bytes, written like 1GiB or 100MB.
type sizeValue struct{ n *int64 }

func (v sizeValue) String() string {
	if v.n == nil {
		return ""
	}
	return strconv.FormatInt(*v.n, 10)
}

func (v sizeValue) Set(s string) error {
	n, err := agent.ParseSize(s)
	if err != nil {
		return err
	}
	*v.n = n
	return nil
}

// logQuotaFlag registers the per-job log quota flag of a node (see
// logQuotaVar); a bad LEVERS9_JOB_LOG_QUOTA is said and ignored.
func logQuotaFlag(fs *flag.FlagSet, name, whose string) *int64 {
	n, err := logQuotaVar(fs, name, whose, os.LookupEnv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "levers9: %v; using the default\n", err)
	}
	return n
}

func derefQuota(n *int64) int64 {
	if n == nil {
		return agent.DefaultLogQuota
	}
	return *n
}
