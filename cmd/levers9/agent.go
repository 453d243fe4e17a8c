package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/levers9/levers9/agent"
	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/tracing"
	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/trace"
)

// agentFlags are the flags of `levers9 agent` and `levers9 agent join`.
type agentFlags struct {
	server, stateDir, logLevel string
	gpu, memory                string
	cpus                       float64
	runtime                    runtimeConfig
	logQuota                   *int64
	otlpEndpoint               string
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
	fs.StringVar(&f.stateDir, "state-dir", defaultStateDir(),
		"where the node identity, the settings given to join or a later start (kept until given again) and job directories live (LEVERS9_AGENT_STATE_DIR)")
	fs.StringVar(&f.logLevel, "log-level", env("LEVERS9_LOG_LEVEL", "info"), "debug, info, warn or error (LEVERS9_LOG_LEVEL)")
	fs.StringVar(&f.gpu, "gpu", "", "declare GPUs instead of detecting them: TYPE:COUNT[,TYPE:COUNT…], e.g. H100:8")
	fs.Float64Var(&f.cpus, "cpus", 0, "declare the CPUs instead of detecting them")
	fs.StringVar(&f.memory, "memory", "", "declare the memory instead of detecting it, e.g. 256GiB")
	fs.StringVar(&f.runtime.Runtime, "runtime", env("LEVERS9_AGENT_RUNTIME", runtimeAuto),
		"how services run: docker (containers), process (child processes, for trusted machines) or auto (Docker when a daemon answers) (LEVERS9_AGENT_RUNTIME)")
	fs.StringVar(&f.runtime.DefaultImage, "default-image", env("LEVERS9_AGENT_DEFAULT_IMAGE", defaultImage),
		"on Docker, the image of services that give a command but no image (LEVERS9_AGENT_DEFAULT_IMAGE)")
	fs.StringVar(&f.runtime.WorkDir, "work-dir", env("LEVERS9_AGENT_WORK_DIR", ""),
		"process runtime: where job directories live, outside the state directory; default "+localWorkBase+"/jobs-HASH as root, else STATE_DIR/jobs (LEVERS9_AGENT_WORK_DIR)")
	f.logQuota = logQuotaFlag(fs, "job-log-quota", "this node")
	fs.StringVar(&f.runtime.JobUIDs, "job-uids", env("LEVERS9_AGENT_JOB_UIDS", ""),
		"process runtime as root: FIRST:COUNT, the uids jobs run as, one per running job; default "+defaultJobUIDs+" (LEVERS9_AGENT_JOB_UIDS)")
	fs.StringVar(&f.otlpEndpoint, "otlp-endpoint", os.Getenv("LEVERS9_OTLP_ENDPOINT"),
		"send OpenTelemetry traces of job starts to this OTLP/HTTP collector, e.g. http://collector:4318; they join the server's traces of the jobs; default none (LEVERS9_OTLP_ENDPOINT)")
	if join {
		fs.StringVar(&f.invite, "invite", "", "the invite code (required)")
		fs.StringVar(&f.name, "name", "", "node name; default: the invite's, else the host name")
	}
}

// agentFlagEnv names the environment variable each flag of the agent
// defaults to: a variable that is set (not empty) gives its flag as the
// command line does, so settings kept in a unit's environment file win
// over those kept in the node state.
var agentFlagEnv = map[string]string{
	"server":        "LEVERS9_SERVER",
	"state-dir":     "LEVERS9_AGENT_STATE_DIR",
	"log-level":     "LEVERS9_LOG_LEVEL",
	"runtime":       "LEVERS9_AGENT_RUNTIME",
	"default-image": "LEVERS9_AGENT_DEFAULT_IMAGE",
	"work-dir":      "LEVERS9_AGENT_WORK_DIR",
	"job-log-quota": "LEVERS9_JOB_LOG_QUOTA",
	"job-uids":      "LEVERS9_AGENT_JOB_UIDS",
	"otlp-endpoint": "LEVERS9_OTLP_ENDPOINT",
}

// unkeptFlags are the agent flags not kept in State.Flags: where the
// state lives, the invite (spent by the join), the node's name (the
// server's answer is State.Name), and those with fields of their own
// (State.Server, State.Declared).
var unkeptFlags = map[string]bool{
	"state-dir": true, "invite": true, "name": true,
	"server": true, "gpu": true, "cpus": true, "memory": true,
}

// givenFlags are the flags of fs that the command line or their
// environment variable gave, as opposed to their defaults.
func givenFlags(fs *flag.FlagSet, lookup func(string) (string, bool)) map[string]bool {
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	for name, env := range agentFlagEnv {
		if v, ok := lookup(env); ok && v != "" && fs.Lookup(name) != nil {
			given[name] = true
		}
	}
	return given
}

// keptSettings is what keepSettings did.
type keptSettings struct {
	changed bool     // st changed: it is to be saved
	applied []string // flags set from st, not given now
	unknown []string // flags kept in st that this binary does not know
}

// keepSettings makes fs and st agree: the settings kept in st that were
// not given now are set on fs, and those given now replace st's. The
// agent thus runs its node as joined, and a flag given once (to join or
// a later start) holds until it is given again; given empty (--gpu= or
// --work-dir=), it goes back to its default. Kept flags this binary does
// not know (written by another version) are left in st, so that a
// downgrade still starts.
func keepSettings(fs *flag.FlagSet, f *agentFlags, given map[string]bool, st *agent.State) (keptSettings, error) {
	var k keptSettings
	for _, name := range slices.Sorted(maps.Keys(st.Flags)) {
		if given[name] || unkeptFlags[name] {
			continue
		}
		if fs.Lookup(name) == nil {
			k.unknown = append(k.unknown, name)
			continue
		}
		if err := fs.Set(name, st.Flags[name]); err != nil {
			return k, fmt.Errorf("the setting --%s=%q kept in %s: %w (give --%s to replace it)",
				name, st.Flags[name], agent.StateFile, err, name)
		}
		k.applied = append(k.applied, name)
	}
	decl, err := f.declared()
	if err != nil {
		return k, err
	}
	before, err := json.Marshal(st)
	if err != nil {
		return k, fmt.Errorf("node state: %w", err)
	}
	if given["server"] && strings.TrimSpace(f.server) != "" {
		st.Server = strings.TrimRight(strings.TrimSpace(f.server), "/")
	}
	// Given resources replace the kept ones field by field, a zero one
	// (detect) included; the others stay as declared before.
	if given["cpus"] {
		st.Declared.CPUs = decl.CPUs
	}
	if given["memory"] {
		st.Declared.MemoryMiB = decl.MemoryMiB
	}
	if given["gpu"] {
		st.Declared.GPUs = decl.GPUs
	}
	for name := range given {
		if unkeptFlags[name] {
			continue
		}
		if st.Flags == nil {
			st.Flags = map[string]string{}
		}
		st.Flags[name] = fs.Lookup(name).Value.String()
	}
	after, err := json.Marshal(st)
	if err != nil {
		return k, fmt.Errorf("node state: %w", err)
	}
	k.changed = !bytes.Equal(before, after)
	return k, nil
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

// newAgentCommand is levers9 agent and levers9 agent join. Their flags
// default to environment variables and are read by the flag package as
// before (levers9 agent -h lists them).
func newAgentCommand(a *app) *cobra.Command {
	agentCmd := func(use, short string, join bool) *cobra.Command {
		return &cobra.Command{
			Use: use, Short: short,
			Long:               short + ".\nRun with -h for its flags; each defaults to the environment variable it names.",
			DisableFlagParsing: true,
			RunE: func(cmd *cobra.Command, args []string) error {
				if join {
					args = append([]string{"join"}, args...)
				}
				return codeErr(runAgent(cmd.Context(), args, a.stderr))
			},
		}
	}
	cmd := agentCmd("agent [flags]", "run the agent of a joined node", false)
	cmd.AddCommand(agentCmd("join --server URL --invite CODE [flags]", "join this machine as a node, then run its agent", true))
	return cmd
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
	// A join starts a state from the flags given; a later start runs with
	// the settings its state keeps, replaced by those given now. A state
	// that does not load is reported once the flags given are checked.
	st := &agent.State{}
	var stateErr error
	if !join {
		if loaded, err := agent.LoadState(f.stateDir); err != nil {
			stateErr = err
		} else {
			st = loaded
		}
	}
	kept, err := keepSettings(fs, &f, givenFlags(fs, os.LookupEnv), st)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitUsage
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		fmt.Fprintf(stderr, "%s: --log-level: %v\n", name, err)
		return exitUsage
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if len(kept.applied) > 0 {
		log.Info("using the settings kept in the node state; give a flag to replace one",
			"state", filepath.Join(f.stateDir, agent.StateFile), "flags", keptFlagsText(fs, kept.applied))
	}
	if len(kept.unknown) > 0 {
		log.Warn("ignoring settings kept in the node state that this version does not know", "flags", kept.unknown)
	}
	err = f.runtime.check(agentRuntimeFlags)
	if err == nil {
		err = checkOTLPEndpoint(f.otlpEndpoint, "--otlp-endpoint")
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitUsage
	}
	if join && (f.server == "" || f.invite == "") {
		fmt.Fprintf(stderr, "%s: --server and --invite are required\n", name)
		return exitUsage
	}
	if stateErr != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, stateErr)
		return exitError
	}
	// Chosen before joining, so that a node that cannot run jobs does
	// not spend its invite.
	chosen, err := chooseRuntime(ctx, f.runtime, agentRuntimeFlags, f.stateDir, true, log.With("component", "runtime"))
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitError
	}
	if join {
		joined, err := agent.Join(ctx, agent.JoinConfig{
			Server: f.server, Invite: f.invite, Name: f.name, StateDir: f.stateDir,
			Inventory: st.Declared.Apply(agent.DetectInventory(ctx)), Declared: st.Declared, Flags: st.Flags, Version: version,
		})
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return exitError
		}
		log.Info("joined", "node", joined.NodeID, "name", joined.Name, "server", joined.Server, "state", filepath.Join(f.stateDir, agent.StateFile))
	} else if kept.changed {
		// Saved once the runtime is chosen, so a setting it refuses is
		// not kept.
		if err := agent.SaveState(f.stateDir, st); err != nil {
			fmt.Fprintf(stderr, "%s: keeping the settings given: %v\n", name, err)
			return exitError
		}
	}
	tracer, stopTracing, err := startTracing(f.otlpEndpoint, tracing.AgentService, log)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitError
	}
	defer stopTracing()
	rt, err := chosen.open(ctx, f.stateDir, log.With("component", "runtime"))
	if err == nil {
		err = serveAgent(ctx, f.stateDir, f.server, st.Declared, rt, *f.logQuota, tracer, log)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitError
	}
	return exitOK
}

// serveAgent runs the agent of the node in stateDir with rt until ctx
// ends. A runtime that holds a connection is
// closed at the end; the containers it runs keep running for the next
// agent.
func serveAgent(ctx context.Context, stateDir, server string, decl agent.Declared, rt runtime.Runtime, logQuota int64, tracer trace.Tracer, log *slog.Logger) error {
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
		Tracer: tracer,
	})
}

// keptFlagsText is the flags of fs named, as a command line would give
// them.
func keptFlagsText(fs *flag.FlagSet, names []string) string {
	args := make([]string, len(names))
	for i, n := range names {
		args[i] = "--" + n + "=" + fs.Lookup(n).Value.String()
	}
	return strings.Join(args, " ")
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
