// Command levers9 is the whole of levers9 in one binary: the server, and
// (as they arrive) the agent and the CLI.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `levers9: a self-hosted, multi-tenant GPU compute platform

Usage:
  levers9 server [flags]   run the control plane (GraphQL at /graphql)
  levers9 agent join --server URL --invite CODE [flags]
                           join this machine as a node, then run its agent
  levers9 agent [flags]    run the agent of a joined node

Client commands (connection: -c CONTEXT, --server, --token; see below):
  levers9 login [--server URL] [--email EMAIL | --token TOKEN] [--name CONTEXT]
                           sign in and store the connection as the current context
  levers9 context list|use|add|remove
                           manage the contexts in ~/.levers9/config
  levers9 run [flags] -- CMD [ARGS...]
                           run CMD as a job, print its output, exit with its code
                           (--image, --gpus N[:TYPE], --env K=V, --timeout, --cpu,
                           --memory, --mount; -d prints the job ID and returns)
  levers9 submit [flags] -- CMD [ARGS...]
                           levers9 run -d: submit, print the job ID
  levers9 jobs [--status S] [-n N]
                           your environment's jobs, newest first
  levers9 job show JOB     a job and its services
  levers9 logs [-f] [--from SEQ] [--json] JOB
                           print a job's output; -f follows it until the job ends
  levers9 cancel JOB...    cancel jobs
  levers9 ls BUCKET[:PREFIX]
                           list a bucket's files
  levers9 cp [-r] SRC DST  copy between the local disk and BUCKET:KEY
  levers9 rm [-r] BUCKET:KEY
                           delete files
  levers9 tokens [-n N]    your token balance, your projects' and recent charges
  levers9 token create|list|revoke
                           API tokens
  levers9 invite create|list|revoke
                           invites for machines to join as nodes
  levers9 queues           queues, their limits and prices
  levers9 nodes            nodes, their resources and state
  levers9 node drain|undrain NAME
                           stop (or resume) placing new jobs on a node
  levers9 version          print the version

jobs, job show, logs, tokens, token, invite, queues, nodes and context
list take --json for scripts. Run "levers9 COMMAND -h" for a command's flags.

Connection: the --server and --token flags, else LEVERS9_SERVER and
LEVERS9_TOKEN, else the context named by -c, else the current context of
~/.levers9/config (LEVERS9_CONFIG names another file; mode 0600).

Exit codes: 0 success; 1 an error (the server refused: the message starts
with its code, such as NOT_FOUND or UNAUTHENTICATED; or it could not be
reached); 2 bad usage (unknown command or flag, missing arguments, -c
naming no context). levers9 run exits with the job's exit code when a
service failed with one, else 1 when the job failed or was cancelled.
`

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// Exit codes scripts can rely on.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	var err error
	switch args[0] {
	case "server":
		cfg, perr := parseServerConfig(args[1:], os.LookupEnv, stderr)
		if perr != nil {
			return usageExit(perr)
		}
		err = runServer(ctx, cfg, stdout)
	case "tokens":
		return runTokens(ctx, args[1:], stdout, stderr)
	case "logs":
		return runLogs(ctx, args[1:], stdout, stderr)
	case "run":
		return runRun(ctx, args[1:], stdout, stderr)
	case "submit":
		return runSubmit(ctx, args[1:], stdout, stderr)
	case "agent":
		return runAgent(ctx, args[1:], stderr)
	case "cancel":
		return runCancel(ctx, args[1:], stdout, stderr)
	case "ls":
		return runLs(ctx, args[1:], stdout, stderr)
	case "cp":
		return runCp(ctx, args[1:], stdout, stderr)
	case "rm":
		return runRm(ctx, args[1:], stdout, stderr)
	case "jobs":
		return runJobs(ctx, args[1:], stdout, stderr)
	case "job":
		return runJob(ctx, args[1:], stdout, stderr)
	case "token":
		return runToken(ctx, args[1:], stdout, stderr)
	case "invite":
		return runInvite(ctx, args[1:], stdout, stderr)
	case "queues":
		return runQueues(ctx, args[1:], stdout, stderr)
	case "nodes":
		return runNodes(ctx, args[1:], stdout, stderr)
	case "node":
		return runNode(ctx, args[1:], stdout, stderr)
	case "login":
		return runLogin(ctx, args[1:], os.Stdin, stdout, stderr)
	case "context":
		return runContext(ctx, args[1:], stdout, stderr)
	case supervisorCommand: // not in the usage: the process runtime runs it
		return runSupervise(args[1:])
	case "version":
		fmt.Fprintln(stdout, "levers9", version)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "levers9: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	if err != nil {
		fmt.Fprintln(stderr, "levers9:", err)
		return exitError
	}
	return exitOK
}

// usageExit is the exit code for a flag parsing error: 0 for -h.
func usageExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}
