package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"
)

// newExecCommand runs a command in a running service of a job, like
// docker exec: levers9 exec JOB [--service S] [-i] [-t] -- CMD [ARGS...].
func newExecCommand(a *app) *cobra.Command {
	var service string
	var input, tty bool
	cmd := &cobra.Command{
		Use:   "exec JOB [--service S] [-i] [-t] -- CMD [ARGS...]",
		Short: "run a command in a running service of a job (-it for a shell)",
		Long: `Run CMD in a running service of JOB (default: the job's first service), next
to its main process: same environment, working directory or container.
Its output is printed here and levers9 exec exits with its exit code.

  -i   send this terminal's input to the command (its end closes the
       command's input)
  -t   give the command a terminal (this one must be a terminal): the keys,
       Ctrl-C included, go to the command; -it for a shell

Without -t, Ctrl-C is passed on to the command (SIGINT) rather than ending
levers9 exec; ending levers9 exec otherwise kills the command. Only the job's
owner and the tenant's admins may exec.`,
		Example:           "  levers9 exec job_123 -- nvidia-smi\n  levers9 exec -it --service web job_123 -- bash",
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	fs := cmd.Flags()
	fs.StringVar(&service, "service", "", "the service to run the command in (default: the job's first)")
	fs.BoolVarP(&input, "stdin", "i", false, "send this terminal's input to the command")
	fs.BoolVarP(&tty, "tty", "t", false, "give the command a terminal (stdin must be one)")
	cmd.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		job, command, ok := execArgs(args, cmd.ArgsLenAtDash())
		if !ok {
			fmt.Fprintf(a.stderr, "Usage: levers9 %s\n%s", cmd.Use, fs.FlagUsages())
			return exitUsage
		}
		call := terminalCall{
			stdin: a.stdin, stdout: a.stdout, stderr: a.stderr,
			tty: tty, input: input, forwardInterrupt: !tty,
		}
		return execCommand(cmd.Context(), c, call, job, service, command, a.stderr)
	})
	return client(cmd, false)
}

// execArgs splits JOB -- CMD ARGS... (dash: where -- was, -1 without):
// everything after -- is the command's, flags included. Without --, a
// command without flags may follow JOB.
func execArgs(args []string, dash int) (job string, command []string, ok bool) {
	if dash == -1 {
		dash = min(1, len(args))
	}
	if dash != 1 || len(args) < 2 {
		return "", nil, false
	}
	return args[0], args[1:], true
}

// execCommand runs command in service of job and returns the exit code
// levers9 exec exits with: the command's own, else 1 (said on stderr).
func execCommand(ctx context.Context, c clientFlags, call terminalCall, job, service string, command []string, stderr io.Writer) int {
	if call.tty && call.input {
		if _, ok := terminalFd(call.stdin); !ok {
			fmt.Fprintln(stderr, "levers9 exec:", errNotTTY)
			return exitUsage
		}
	}
	j, err := c.jobServices(ctx, job)
	if err == nil {
		service, err = chooseService(j.names(), service)
	}
	if err != nil {
		fmt.Fprintf(stderr, "levers9 exec: %v\n", err)
		return exitError
	}
	end, err := call.run(ctx, func(ctx context.Context, size termSize) (net.Conn, error) {
		q := url.Values{"cmd": command}
		if call.tty {
			q.Set("tty", "1")
			q.Set("rows", strconv.Itoa(int(size.rows)))
			q.Set("cols", strconv.Itoa(int(size.cols)))
		}
		return c.dialStream(ctx, streamPath("exec", j.ID, service), q)
	})
	switch {
	case err == nil:
		return end.code
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "levers9 exec: stopped; the command in %s was killed\n", service)
	case errors.As(err, new(remoteError)):
		fmt.Fprintf(stderr, "levers9 exec: the command in %s ended without an exit code: %v\n", service, err)
	default:
		fmt.Fprintf(stderr, "levers9 exec: %v\n", err)
	}
	return exitError
}
