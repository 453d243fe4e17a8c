// Command levers9 is the whole of levers9 in one binary: the server, and
// (as they arrive) the agent and the CLI.
package main

import (
	"context"
	"errors"
	"flag"
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
  levers9 admin backup [--data-dir DIR] FILE
                           archive the embedded server's data (SQLite, buckets,
                           blobs, secret key), consistent while it serves
  levers9 admin restore FILE --data-dir NEW
                           unpack a backup into a new, empty data directory

Client commands (connection: -c CONTEXT, --server, --token; see below):
  levers9 login [--server URL] [--email EMAIL | --token TOKEN] [--name CONTEXT]
                           sign in and store the connection as the current context
  levers9 context list|use|add|remove
                           manage the contexts in ~/.levers9/config
  levers9 run [flags] -- CMD [ARGS...]
                           run CMD as a job, print its output, exit with its code
                           (--image, --gpus N[:TYPE], --env K=V, --timeout, --cpu,
                           --memory, --mount; -d prints the job ID and returns;
                           -it: an interactive job on a terminal attached here)
  levers9 run app.py[::ENTRYPOINT] [ARGS...]
                           run a Python app's local entrypoint here, its functions
                           deployed for as long as it runs (python3 -m levers9 run)
  levers9 deploy app.py    deploy a Python app: a new version of its deployments,
                           serving until stopped (python3 -m levers9 deploy)
  levers9 serve app.py     serve a Python app at temporary URLs, redeployed on
                           save, removed on Ctrl-C
  levers9 task show TASK   a function call: state, error, cold-start phases
  levers9 app list|stop|rollback|logs
                           serverless apps and their versions (stop [--version N],
                           rollback APP [vN], logs APP [--version N] [-f])
  levers9 secret create|list|delete
                           secrets for functions (create NAME KEY=VALUE... [--force]
                           [--from-dotenv FILE]; KEY=- reads stdin); values never shown
  levers9 queue requeue TASK...
                           put dead task-queue items back in their queue
  levers9 submit [flags] -- CMD [ARGS...]
                           levers9 run -d: submit, print the job ID
  levers9 jobs [--status S] [-n N] [-o wide] [--watch]
                           your environment's jobs, newest first (-o wide: owner,
                           nodes, GPUs; --watch redraws as they change)
  levers9 queue [-q QUEUE] [-o wide] [--watch]
                           pending jobs, oldest first, and why each waits (REASON)
  levers9 job show JOB     a job and its services
  levers9 logs [-f] [--from SEQ] [--json] JOB
                           print a job's output; -f follows it until the job ends
  levers9 cancel JOB...    cancel jobs
  levers9 exec JOB [--service S] [-i] [-t] -- CMD [ARGS...]
                           run CMD in a running service (-it for a shell)
  levers9 attach JOB [--service S]
                           join a service's terminal (Ctrl-P Ctrl-Q detaches)
  levers9 port-forward JOB [LOCAL_PORT:]SERVICE:PORT [LOCAL_PORT]
                           forward a local port to a service's port
  levers9 buckets [list|create|delete]
                           buckets (create NAME [--storage S] [--project P])
  levers9 ls [--json] BUCKET[:PREFIX]
                           list a bucket's files
  levers9 cp [-r] [--progress] SRC DST
                           copy between the local disk and BUCKET:KEY; - is
                           stdin (cp - B:K) or stdout (cp B:K -)
  levers9 rm [-r] BUCKET:KEY
                           delete files
  levers9 tokens [-n N]    your token balance, your projects' and recent charges
  levers9 token create|list|revoke
                           API tokens
  levers9 invite create|list|revoke
                           invites for machines to join as nodes
  levers9 queues           queues, their limits and prices
  levers9 nodes            nodes, their resources and state
  levers9 top [--watch]    nodes: GPUs booked and free, CPUs, memory, running jobs
  levers9 node drain|undrain NAME
                           stop (or resume) placing new jobs on a node
  levers9 version          print the version, the commit and the Go version
  levers9 completion bash|zsh|fish|powershell
                           print a shell completion script (see levers9 completion -h)

jobs, queue, job show, logs, ls, buckets, tokens, token, invite, queues,
nodes, top, context list, task show, app list and secret list take --json
for scripts. Run "levers9 COMMAND -h" for a command's flags.

Connection: the --server and --token flags, else LEVERS9_SERVER and
LEVERS9_TOKEN, else the context named by -c, else the current context of
~/.levers9/config (LEVERS9_CONFIG names another file; mode 0600).
-c/--context, --server, --token and --json go before or after the command:
levers9 -c prod jobs is levers9 jobs -c prod. A server URL without a
scheme is https:// (levers9.example.com), or http:// for localhost,
127.0.0.1 and [::1] (localhost:8080).

Durations (--timeout, --expires) are Go durations (90s, 45m, 2h30m) or
days (30d, 1d12h).

Exit codes: 0 success; 1 an error (the server refused: the message starts
with its code, such as NOT_FOUND or UNAUTHENTICATED; or it could not be
reached); 2 bad usage (unknown command or flag, missing arguments, -c
naming no context). levers9 run exits with the job's exit code when a
service failed with one, else 1 when the job failed or was cancelled;
levers9 exec and attach (and run -it) exit with the command's or the
service's exit code; run exits 130 when Ctrl-C stops it following the job
(the job keeps running: levers9 logs -f JOB follows it again).
`

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// Exit codes scripts can rely on.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
	// exitInterrupted is a command stopped by Ctrl-C (or SIGTERM) before
	// it was done, as a shell reports a program killed by SIGINT (128+2).
	exitInterrupted = 130
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line args and returns its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCommand(&app{stdin: os.Stdin, stdout: stdout, stderr: stderr})
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	return exitCodeOfRun(cmd, err, stderr)
}

// usageExit is the exit code for a flag parsing error of the commands that
// parse their own flags (server, agent): 0 for -h.
func usageExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}
