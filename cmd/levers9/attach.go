package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

// newAttachCommand joins the terminal of a service started with tty, like
// docker attach: levers9 attach JOB [--service S].
func newAttachCommand(a *app) *cobra.Command {
	var service string
	cmd := &cobra.Command{
		Use:   "attach JOB [--service S]",
		Short: "join the terminal of a job's service started with a terminal (tty)",
		Long: `Join the terminal of a running service started with a terminal (levers9 run -it,
or tty: true in a job's spec): its recent output is shown, the keys typed here
go to it and its window follows this one's size. Several may be attached at once.

Ctrl-P Ctrl-Q detaches: levers9 attach returns and the service keeps running.
When the service ends, levers9 attach exits with its exit code. Only the job's
owner and the tenant's admins may attach.`,
		Example:           "  levers9 attach job_123\n  levers9 attach --service shell job_123",
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	cmd.Flags().StringVar(&service, "service", "", "the service to attach to (default: the job's first started with a terminal)")
	cmd.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) != 1 {
			fmt.Fprintf(a.stderr, "Usage: levers9 %s\n%s", cmd.Use, cmd.Flags().FlagUsages())
			return exitUsage
		}
		j, err := c.jobServices(cmd.Context(), args[0])
		candidates := j.names()
		if err == nil && service != "" {
			service, err = chooseService(candidates, service)
			candidates = []string{service}
		}
		if err != nil {
			fmt.Fprintf(a.stderr, "levers9 attach: %v\n", err)
			return exitError
		}
		end, attached, err := attachService(cmd.Context(), c, attachCall(a), j.ID, candidates)
		return attachOutcome("levers9 attach", j.ID, attached, end, err, a.stderr)
	})
	return client(cmd, false)
}

// attachCall is the local side of an attach: this terminal, raw when it is
// one, with the detach keys.
func attachCall(a *app) terminalCall {
	return terminalCall{stdin: a.stdin, stdout: a.stdout, stderr: a.stderr, tty: true, input: true, detachKeys: true}
}

// attachService attaches to the first of services that has a terminal
// (the server refuses the others with BAD_USER_INPUT: GraphQL does not say
// which services have one) and runs the session. It returns the service
// attached to.
func attachService(ctx context.Context, c clientFlags, call terminalCall, job string, services []string) (termEnd, string, error) {
	if len(services) == 0 {
		return termEnd{}, "", errors.New("the job has no services")
	}
	if _, ok := terminalFd(call.stdin); !ok {
		call.tty = false // piped input: not raw, no size to follow
	}
	var attached string
	end, err := call.run(ctx, func(ctx context.Context, size termSize) (net.Conn, error) {
		q := url.Values{"rows": {strconv.Itoa(int(size.rows))}, "cols": {strconv.Itoa(int(size.cols))}}
		var first error
		for _, s := range services {
			conn, err := c.dialStream(ctx, streamPath("attach", job, s), q)
			if err == nil {
				attached = s
				return conn, nil
			}
			if first == nil {
				first = err
			}
			if refusalCode(err) != "BAD_USER_INPUT" {
				break
			}
		}
		if len(services) > 1 {
			return nil, fmt.Errorf("%w (tried each service; --service names one)", first)
		}
		return nil, first
	})
	return end, attached, err
}

// attachOutcome says how an attach ended and returns the exit code: the
// service's own when it ended, 0 when the user detached, else 1.
func attachOutcome(name, job, service string, end termEnd, err error, stderr io.Writer) int {
	switch {
	case err == nil && end.detached:
		fmt.Fprintf(stderr, "\ndetached from service %s of job %s; it keeps running (levers9 attach %s re-attaches)\n", service, job, job)
		return exitOK
	case err == nil:
		return end.code
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "\n%s: stopped; job %s keeps running (levers9 attach %s re-attaches)\n", name, job, job)
	case errors.Is(err, errConnectionLost):
		fmt.Fprintf(stderr, "\n%s: %v; job %s may still run (levers9 attach %s re-attaches)\n", name, err, job, job)
	case errors.As(err, new(remoteError)):
		fmt.Fprintf(stderr, "\n%s: the terminal of service %s ended without an exit code: %v\n", name, service, err)
	default:
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
	}
	return exitError
}

// Attaching to a job levers9 run -it submitted: how often its state is
// asked while it starts, and how many refused attaches (the service is
// starting, the node has not heard yet) are tried again.
const (
	startPoll     = time.Second
	attachRetries = 10
	attachBackoff = 500 * time.Millisecond
)

// attachRun waits for the single service of a job that levers9 run -it
// submitted to run, then attaches call to it. A job that ended first has
// its output printed and ends as levers9 run ends.
func attachRun(ctx context.Context, c clientFlags, job, service string, call terminalCall, stdout, stderr io.Writer) int {
	said := false
	for tries := 0; ; tries++ {
		st, err := c.waitStarted(ctx, job, func(st jobState) {
			if !said {
				said = true
				fmt.Fprintf(stderr, "levers9: waiting for job %s to start (%s: %s)\n", job, st.Status, st.StatusReason)
			}
		})
		switch {
		case errors.Is(err, context.Canceled):
			fmt.Fprintf(stderr, "levers9 run: stopped waiting; job %s keeps going (levers9 attach %s attaches)\n", job, job)
			return exitError
		case err != nil:
			fmt.Fprintln(stderr, "levers9 run:", err)
			return exitError
		case st.ended():
			return printEnded(ctx, c, st, job, stdout, stderr)
		}
		end, _, err := attachService(ctx, c, call, job, []string{service})
		switch refusalCode(err) {
		case "NOT_FOUND", "BAD_USER_INPUT", "UNAVAILABLE":
			// Running as the server saw it, not yet (or no longer) as the
			// node does: ask again.
			if tries < attachRetries {
				select {
				case <-time.After(attachBackoff):
					continue
				case <-ctx.Done():
				}
			}
		}
		return attachOutcome("levers9 run", job, service, end, err, stderr)
	}
}

// printEnded prints the output of a job that ended before it could be
// attached to, and returns levers9 run's exit code for it.
func printEnded(ctx context.Context, c clientFlags, st jobState, job string, stdout, stderr io.Writer) int {
	err := c.printLogs(ctx, job, 0, 1, func(l logLine) {
		w := stdout
		if l.Stream != "stdout" {
			w = stderr
		}
		fmt.Fprintln(w, l.Text)
	})
	if err != nil {
		fmt.Fprintln(stderr, "levers9 run:", err)
	}
	return exitCodeOf(st, job, stderr)
}

// waitStarted polls the job until all its services run or it has ended;
// waiting is told each state on the way.
func (c clientFlags) waitStarted(ctx context.Context, job string, waiting func(jobState)) (jobState, error) {
	for {
		st, err := c.jobState(ctx, job)
		if err != nil || st.ended() || st.running() {
			return st, err
		}
		waiting(st)
		select {
		case <-time.After(startPoll):
		case <-ctx.Done():
			return st, ctx.Err()
		}
	}
}

// running reports whether the job and all its services run.
func (s jobState) running() bool {
	if s.Status != "RUNNING" || len(s.Services) == 0 {
		return false
	}
	for _, sv := range s.Services {
		if sv.Status != "RUNNING" {
			return false
		}
	}
	return true
}
