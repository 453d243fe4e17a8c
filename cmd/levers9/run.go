package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

const submitMutation = `mutation($s: JobSpecInput!) { submitJob(spec: $s) { id } }`

// runRun submits a one-service job running CMD ARGS, prints its output as
// if it ran here (stdout to stdout, stderr to stderr) and exits with its
// exit code.
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := clientFlags{flagsFirst: true}
	fs := flag.NewFlagSet("levers9 run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: levers9 run [flags] -- CMD [ARGS...]")
		fs.PrintDefaults()
	}
	c.register(fs)
	queueFlag := fs.String("queue", "", "queue ID or name (default: the context's queue, else default)")
	projectFlag := fs.String("project", "", "project ID or name to charge (default: the context's project)")
	cpu := fs.Float64("cpu", 0, "CPUs (0: the queue's default)")
	memory := fs.Int("memory", 0, "memory in MiB (0: the queue's default)")
	name := fs.String("name", "", "job name")
	var mounts mountFlags
	fs.Var(&mounts, "mount", "mount a bucket: BUCKET:/PATH, or BUCKET:/PATH:ro for read-only (repeatable; with this runtime at ./PATH in the working directory)")
	if code, ok := c.parse(fs, args, stderr); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitUsage
	}
	svc := map[string]any{"name": "main", "command": fs.Args()}
	if *cpu > 0 {
		svc["cpu"] = *cpu
	}
	if *memory > 0 {
		svc["memoryMiB"] = *memory
	}
	queue, project := first(*queueFlag, c.Queue, "default"), first(*projectFlag, c.Project)
	spec := map[string]any{"queue": queue, "services": []any{svc}}
	if project != "" {
		spec["project"] = project
	}
	if *name != "" {
		spec["name"] = *name
	}
	if len(mounts) > 0 {
		spec["mounts"] = mounts
	}
	var out struct{ SubmitJob struct{ ID string } }
	if err := c.query(ctx, submitMutation, map[string]any{"s": spec}, &out); err != nil {
		fmt.Fprintln(stderr, "levers9 run:", err)
		return exitError
	}
	job := out.SubmitJob.ID
	fmt.Fprintf(stderr, "levers9: job %s submitted to queue %s\n", job, queue)
	err := c.followLogs(ctx, job, 1, func(l logLine) {
		w := stdout
		if l.Stream == "stderr" {
			w = stderr
		}
		fmt.Fprintln(w, l.Text)
	})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintf(stderr, "levers9 run: stopped following; job %s keeps running\n", job)
		} else {
			fmt.Fprintln(stderr, "levers9 run:", err)
		}
		return exitError
	}
	st, err := c.waitEnded(ctx, job)
	if err != nil {
		fmt.Fprintln(stderr, "levers9 run:", err)
		return exitError
	}
	return exitCodeOf(st, job, stderr)
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
