package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// submitMutation carries an idempotency key, new for each submission:
// retried after an outage or a lost answer, it returns the job the first
// try made instead of making a second.
const submitMutation = `mutation($s: JobSpecInput!, $k: String) { submitJob(spec: $s, idempotencyKey: $k) { id } }`

// newRunCommand is levers9 run and levers9 submit: run submits a
// one-service job running CMD ARGS (or IMAGE's own command), prints its
// output as if it ran here (stdout to stdout, stderr to stderr) and exits
// with its exit code. With -d (and as levers9 submit) it prints the job's
// ID and returns, like sbatch.
func newRunCommand(a *app, name string) *cobra.Command {
	short := "run CMD as a job, print its output, exit with its code"
	if name == "submit" {
		short = "levers9 run -d: submit, print the job ID"
	}
	var f runFlags
	cmd := &cobra.Command{
		Use:   name + " [flags] [--] [CMD [ARGS...]]",
		Short: short,
		Long: short + ".\nCMD is required without --image; everything after CMD (or after --) is the job's, flags included." +
			pythonRunHelp(name) +
			"\n\nWith -it (--interactive --tty) the job is interactive and CMD runs on a terminal that this one is\n" +
			"attached to once it starts, as levers9 attach does: Ctrl-P Ctrl-Q detaches, the job ID printed first\n" +
			"re-attaches; levers9 " + name + " exits with CMD's exit code.",
	}
	// Flags end at CMD: the rest is the job's command line.
	cmd.Flags().SetInterspersed(false)
	f.register(cmd.Flags(), name == "submit")
	cmd.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if name == "run" && len(args) > 0 && isPythonTarget(args[0]) {
			var set []string
			cmd.Flags().Visit(func(fl *pflag.Flag) {
				if cmd.InheritedFlags().Lookup(fl.Name) == nil { // not -c, --server, --token
					set = append(set, "--"+fl.Name)
				}
			})
			if len(set) > 0 {
				fmt.Fprintf(a.stderr, "levers9 run: %s: a Python app's functions declare their own queue and resources; "+
					"flags for the entrypoint go after the script\n", strings.Join(set, ", "))
				return exitUsage
			}
			return runPython(cmd.Context(), c, args, a.stdin, a.stdout, a.stderr)
		}
		if len(args) == 0 && f.image == "" {
			fmt.Fprintf(a.stderr, "Usage: levers9 %s [flags] [--] [CMD [ARGS...]]   (CMD is required without --image)\n%s", name, cmd.Flags().FlagUsages())
			return exitUsage
		}
		if name == "submit" {
			f.detach = true
		}
		if f.tty && !f.interactive {
			fmt.Fprintf(a.stderr, "levers9 %s: -t needs -i: a terminal is for an interactive job (levers9 %s -it -- CMD)\n", name, name)
			return exitUsage
		}
		if _, ok := terminalFd(a.stdin); f.tty && !f.detach && !ok {
			fmt.Fprintf(a.stderr, "levers9 %s: %v\n", name, errNotTTY)
			return exitUsage
		}
		return runJob(cmd.Context(), c, name, f, args, a.stdin, a.stdout, a.stderr)
	})
	return client(cmd, false)
}

// runFlags are what levers9 run and submit take besides the connection.
type runFlags struct {
	queue, project, name, image string
	cpu                         float64
	memory                      int
	gpus                        gpuFlag
	env                         envFlags
	ports                       portFlags
	timeout                     timeoutFlag
	mounts                      mountFlags
	detach                      bool
	interactive                 bool
	tty                         bool
}

func (f *runFlags) register(fs *pflag.FlagSet, submit bool) {
	fs.StringVar(&f.queue, "queue", "", "queue ID or name (default: the context's queue, else default)")
	fs.StringVar(&f.project, "project", "", "project ID or name to charge (default: the context's project)")
	fs.StringVar(&f.name, "name", "", "job name")
	fs.StringVar(&f.image, "image", "", "container image (a node with the docker runtime runs it); without CMD its own command runs")
	fs.Float64Var(&f.cpu, "cpu", 0, "CPUs (0: the queue's default)")
	fs.IntVar(&f.memory, "memory", 0, "memory in MiB (0: the queue's default)")
	fs.Var(&f.gpus, "gpus", "GPUs: N:TYPE, N:TYPE1,TYPE2 (a preference list), or N when the queue offers one GPU type")
	fs.Var(&f.env, "env", "an environment variable K=V (repeatable)")
	fs.Var(&f.ports, "port", "a port the service listens on, reachable through the relay: NAME=NUMBER, or NAME for a free one (repeatable)")
	fs.Var(&f.timeout, "timeout", "stop the job after this long: a duration (90m, 2h30m, 1d) or seconds")
	fs.Var(&f.mounts, "mount", "mount a bucket: BUCKET:/PATH, or BUCKET:/PATH:ro for read-only (repeatable)")
	detach := "detach: print the job's ID and return (like levers9 submit)"
	if submit {
		detach = "accepted for symmetry with run: submit always detaches"
	}
	fs.BoolVarP(&f.detach, "detach", "d", false, detach)
	fs.BoolVarP(&f.interactive, "interactive", "i", false, "submit an interactive job (for queues that take interactive jobs)")
	fs.BoolVarP(&f.tty, "tty", "t", false, "with -i: run CMD on a terminal and attach this one to it (levers9 run -it -- bash)")
}

// runJob submits the job f and command describe; unless f.detach it
// follows its output and returns its exit code.
func runJob(ctx context.Context, c clientFlags, name string, f runFlags, command []string, stdin io.Reader, stdout, stderr io.Writer) int {
	queue, project := first(f.queue, c.Queue, "default"), first(f.project, c.Project)
	svc := map[string]any{"name": "main"}
	if len(command) > 0 {
		svc["command"] = command
	}
	if f.image != "" {
		svc["image"] = f.image
	}
	if f.cpu > 0 {
		svc["cpu"] = f.cpu
	}
	if f.memory > 0 {
		svc["memoryMiB"] = f.memory
	}
	if len(f.env) > 0 {
		svc["env"] = f.env
	}
	if len(f.ports) > 0 {
		svc["ports"] = f.ports
	}
	if f.gpus.count > 0 {
		types := f.gpus.types
		if len(types) == 0 {
			t, err := c.onlyGPUType(ctx, queue, f.gpus.count)
			if err != nil {
				fmt.Fprintf(stderr, "levers9 %s: %v\n", name, err)
				return exitError
			}
			types = []string{t}
		}
		svc["gpus"], svc["gpuTypes"] = f.gpus.count, types
	}
	if f.tty {
		svc["tty"] = true
	}
	spec := map[string]any{"queue": queue, "services": []any{svc}}
	if project != "" {
		spec["project"] = project
	}
	if f.name != "" {
		spec["name"] = f.name
	}
	if f.timeout > 0 {
		spec["timeoutSeconds"] = int(f.timeout)
	}
	if len(f.mounts) > 0 {
		spec["mounts"] = f.mounts
	}
	if f.interactive {
		spec["interactive"] = true
	}
	var out struct{ SubmitJob struct{ ID string } }
	if err := c.mutateSafely(ctx, submitMutation, map[string]any{"s": spec, "k": rand.Text()}, &out); err != nil {
		fmt.Fprintf(stderr, "levers9 %s: %v\n", name, err)
		return exitError
	}
	job := out.SubmitJob.ID
	if f.detach {
		fmt.Fprintln(stdout, job)
		return exitOK
	}
	fmt.Fprintf(stderr, "levers9: job %s submitted to queue %s\n", job, queue)
	if f.tty {
		call := terminalCall{stdin: stdin, stdout: stdout, stderr: stderr, tty: true, input: true, detachKeys: true}
		return attachRun(ctx, c, job, svc["name"].(string), call, stdout, stderr)
	}
	err := c.followLogs(ctx, job, 1, func(l logLine) {
		w := stdout
		if l.Stream != "stdout" {
			w = stderr // levers9's own notes too: they are not the job's output
		}
		fmt.Fprintln(w, l.Text)
	})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintf(stderr, "levers9 run: stopped following; job %s keeps running\n", job)
			return exitInterrupted
		}
		fmt.Fprintln(stderr, "levers9 run:", err)
		return exitError
	}
	st, err := c.waitEnded(ctx, job)
	if errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "levers9 run: stopped waiting; job %s keeps running\n", job)
		return exitInterrupted
	}
	if err != nil {
		fmt.Fprintln(stderr, "levers9 run:", err)
		return exitError
	}
	return exitCodeOf(st, job, stderr)
}

// onlyGPUType is the GPU type of --gpus N without a type: the queue's only
// one. With several, the user must choose; guessing could bill the
// dearest.
func (c clientFlags) onlyGPUType(ctx context.Context, queue string, n int) (string, error) {
	var out struct {
		Queues struct {
			Edges []struct {
				Node struct {
					Name      string
					GpuPrices []struct{ Type string }
				}
			}
		}
	}
	err := c.query(ctx, `query($q: String!, $id: ID!) { queues(first: 2, where: {or: [{name: $q}, {id: $id}]}) {
  edges { node { name gpuPrices { type } } } } }`, map[string]any{"q": queue, "id": queue}, &out)
	if err != nil {
		return "", err
	}
	if len(out.Queues.Edges) != 1 {
		return "", fmt.Errorf("NOT_FOUND: queue %q not found", queue)
	}
	q := out.Queues.Edges[0].Node
	var types []string
	for _, g := range q.GpuPrices {
		types = append(types, g.Type)
	}
	switch len(types) {
	case 0:
		return "", fmt.Errorf("queue %s offers no GPUs", q.Name)
	case 1:
		return types[0], nil
	}
	return "", fmt.Errorf("queue %s offers several GPU types (%s): say which, as --gpus %d:%s", q.Name, strings.Join(types, ", "), n, types[0])
}

// gpuFlag is --gpus N[:TYPE[,TYPE...]].
type gpuFlag struct {
	count int
	types []string
}

func (g *gpuFlag) String() string { return "" }
func (g *gpuFlag) Type() string   { return "N[:TYPE]" }

func (g *gpuFlag) Set(v string) error {
	n, types, hasTypes := strings.Cut(v, ":")
	count, err := strconv.Atoi(n)
	if err != nil || count < 1 {
		return fmt.Errorf("%q: want N, N:TYPE or N:TYPE1,TYPE2 with N at least 1", v)
	}
	g.count, g.types = count, nil
	if hasTypes {
		for _, t := range strings.Split(types, ",") {
			if t = strings.TrimSpace(t); t == "" {
				return fmt.Errorf("%q: empty GPU type", v)
			}
			g.types = append(g.types, t)
		}
	}
	return nil
}

// envFlags are the --env flags, as EnvVarInput.
type envFlags []map[string]any

func (e *envFlags) String() string { return "" }
func (e *envFlags) Type() string   { return "K=V" }

// Set parses K=V; the server checks the name.
func (e *envFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want NAME=VALUE", v)
	}
	*e = append(*e, map[string]any{"name": k, "value": val})
	return nil
}

// portFlags are --port NAME=NUMBER or NAME (0: the node picks one); the
// server checks names and numbers.
type portFlags []map[string]any

func (p *portFlags) String() string { return "" }
func (p *portFlags) Type() string   { return "NAME[=PORT]" }

func (p *portFlags) Set(v string) error {
	name, num, hasNum := strings.Cut(v, "=")
	if name == "" {
		return fmt.Errorf("%q: want NAME=PORT or NAME", v)
	}
	port := 0
	if hasNum {
		n, err := strconv.Atoi(num)
		if err != nil {
			return fmt.Errorf("%q: the port must be a number", v)
		}
		port = n
	}
	*p = append(*p, map[string]any{"name": name, "port": port})
	return nil
}

// timeoutFlag is --timeout in whole seconds, from a duration
// (parseDuration) or a number of seconds.
type timeoutFlag int

func (t *timeoutFlag) String() string { return "" }
func (t *timeoutFlag) Type() string   { return "duration" }

func (t *timeoutFlag) Set(v string) error {
	if s, err := strconv.Atoi(v); err == nil {
		if s < 1 {
			return fmt.Errorf("%q: at least one second", v)
		}
		*t = timeoutFlag(s)
		return nil
	}
	d, err := parseDuration(v)
	if err != nil || d < time.Second {
		return fmt.Errorf("%q: want a duration of at least 1s (90m, 2h30m, 1d) or seconds", v)
	}
	*t = timeoutFlag((d + time.Second - 1) / time.Second) // whole seconds, rounded up
	return nil
}

// waitEnded polls the job until it has ended: its log stream ends with it,
// so this normally returns at once.
func (c clientFlags) waitEnded(ctx context.Context, job string) (jobState, error) {
	for {
		st, err := c.jobState(ctx, job)
		if err != nil || st.ended() {
			return st, err
		}
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return st, ctx.Err()
		}
	}
}

// exitCodeOf maps the end of a job to the exit code of `levers9 run`: the
// service's own code when it failed with one.
func exitCodeOf(st jobState, job string, stderr io.Writer) int {
	switch st.Status {
	case "COMPLETE":
		return exitOK
	case "CANCELLED":
		fmt.Fprintf(stderr, "levers9 run: job %s was cancelled: %s\n", job, st.StatusReason)
		return exitError
	}
	fmt.Fprintf(stderr, "levers9 run: job %s failed: %s\n", job, st.StatusReason)
	for _, s := range st.Services {
		if s.ExitCode != nil && *s.ExitCode != 0 {
			return *s.ExitCode
		}
	}
	return exitError
}

// mountFlags are the --mount flags of levers9 run, as JobSpecInput mounts.
type mountFlags []map[string]any

func (m *mountFlags) String() string { return "" }
func (m *mountFlags) Type() string   { return "BUCKET:/PATH[:ro]" }

// Set parses BUCKET:/PATH[:ro]; the server checks the rest (bucket, path).
func (m *mountFlags) Set(v string) error {
	bucket, rest, ok := strings.Cut(v, ":")
	if !ok || bucket == "" || !strings.HasPrefix(rest, "/") {
		return fmt.Errorf("%q: want BUCKET:/PATH or BUCKET:/PATH:ro", v)
	}
	readOnly := false
	if p, ok := strings.CutSuffix(rest, ":ro"); ok {
		rest, readOnly = p, true
	}
	if strings.Contains(rest, ":") {
		return fmt.Errorf("%q: the only option after the path is :ro", v)
	}
	*m = append(*m, map[string]any{"bucket": bucket, "path": rest, "readOnly": readOnly})
	return nil
}
