package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

const appUsage = `usage: levers9 app list [--json]
       levers9 app stop APP... | levers9 app stop APP --version N
       levers9 app rollback APP [vN]
       levers9 app logs APP [--version N] [-f]
APP is an app's ID or the name of a deployed (or running) app.
`

// newAppCommand is levers9 app list|stop|rollback|logs: serverless apps
// and their versions.
func newAppCommand(a *app) *cobra.Command {
	list := &cobra.Command{Use: "list", Short: "apps, newest first, with their live and latest versions", ValidArgsFunction: cobra.NoFileCompletions}
	list.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) != 0 {
			fmt.Fprint(a.stderr, appUsage)
			return exitUsage
		}
		return listApps(cmd.Context(), c, a.json, a.stdout, a.stderr)
	})

	var stopVersion int
	stop := &cobra.Command{Use: "stop APP... | stop APP --version N",
		Short:             "stop apps (their calls are cancelled, their containers stopped), or one version of a deployed app",
		ValidArgsFunction: cobra.NoFileCompletions}
	stop.Flags().IntVar(&stopVersion, "version", 0, "stop only this version of the app (its URLs answer 404; the alias moves to the newest serving version)")
	stop.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) == 0 || stopVersion < 0 || (stopVersion > 0 && len(args) != 1) {
			fmt.Fprint(a.stderr, appUsage)
			return exitUsage
		}
		return stopApps(cmd.Context(), c, args, stopVersion, a.stdout, a.stderr)
	})

	rollback := &cobra.Command{Use: "rollback APP [vN]",
		Short:             "point the app's unversioned URLs at version N (default: the serving version before the live one)",
		ValidArgsFunction: cobra.NoFileCompletions}
	rollback.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		v := 0
		if len(args) == 2 {
			var err error
			if v, err = parseVersion(args[1]); err != nil {
				fmt.Fprintf(a.stderr, "levers9 app rollback: %v\n", err)
				return exitUsage
			}
		}
		if len(args) < 1 || len(args) > 2 {
			fmt.Fprint(a.stderr, appUsage)
			return exitUsage
		}
		return rollbackApp(cmd.Context(), c, args[0], v, a.stdout, a.stderr)
	})

	var logsVersion int
	var follow bool
	logs := &cobra.Command{Use: "logs APP [--version N] [-f]",
		Short:             "print the output of an app's containers; -f follows them (and new ones) until Ctrl-C or the app stops",
		ValidArgsFunction: cobra.NoFileCompletions}
	logs.Flags().IntVar(&logsVersion, "version", 0, "only the containers of this version (default: every version)")
	logs.Flags().BoolVarP(&follow, "follow", "f", false, "follow the lines, and those of containers started later")
	logs.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) != 1 || logsVersion < 0 {
			fmt.Fprint(a.stderr, appUsage)
			return exitUsage
		}
		return appLogs(cmd.Context(), c, args[0], logsVersion, follow, a.stdout, a.stderr)
	})
	return groupCommand(a, "app", "serverless apps and their versions", appUsage,
		client(list, true), client(stop, false), client(rollback, false), client(logs, false))
}

// parseVersion reads a version as users write it: 3 or v3.
func parseVersion(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimPrefix(s, "v"), "V"))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%q is no version (v1, v2, … or 1, 2, …)", s)
	}
	return n, nil
}

type appRow struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	State       string     `json:"state"`
	Ephemeral   bool       `json:"ephemeral"`
	Version     int        `json:"version"`
	LiveVersion int        `json:"liveVersion"`
	CreatedAt   time.Time  `json:"createdAt"`
	StoppedAt   *time.Time `json:"stoppedAt"`
	StopReason  string     `json:"stopReason"`
	Owner       struct {
		Email string `json:"email"`
	} `json:"owner"`
	Functions []struct {
		Name    string `json:"name"`
		Version int    `json:"version"`
	} `json:"functions"`
}

const appFields = `id name state ephemeral version liveVersion createdAt stoppedAt stopReason owner { email } functions { name version }`

func listApps(ctx context.Context, c clientFlags, asJSON bool, stdout, stderr io.Writer) int {
	rows, err := listRows[appRow](ctx, c, "apps", `{ apps(first: 1000, orderBy: {field: CREATED_AT, direction: DESC}) { edges { node { `+appFields+` } } } }`)
	if err != nil {
		fmt.Fprintln(stderr, "levers9 app list:", err)
		return exitError
	}
	if asJSON {
		return printJSON(stdout, stderr, rows)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tNAME\tSTATE\tLIVE\tLATEST\tFUNCTIONS\tOWNER\tCREATED\tSTOPPED")
	for _, r := range rows {
		// The functions of the latest version: older versions' are the
		// same names, mostly.
		var fns []string
		for _, f := range r.Functions {
			if f.Version == r.Version || f.Version == 0 {
				fns = append(fns, f.Name)
			}
		}
		live, latest := "v"+strconv.Itoa(r.LiveVersion), "v"+strconv.Itoa(r.Version)
		if r.Ephemeral {
			live, latest = "-", "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Name, r.State, live, latest, orDash(strings.Join(fns, ",")),
			r.Owner.Email, r.CreatedAt.Local().Format(time.DateTime), timeOrDash(r.StoppedAt))
	}
	if err := w.Flush(); err != nil {
		return exitError
	}
	return exitOK
}

// resolveApp is the ID of app arg: an ID as is, else the app of that name
// that is not stopped (a deployed one before a running ephemeral one).
func resolveApp(ctx context.Context, c clientFlags, arg string) (string, error) {
	if strings.HasPrefix(arg, "app_") {
		return arg, nil
	}
	var out struct {
		Apps struct {
			Edges []struct{ Node struct{ ID, State string } }
		}
	}
	err := c.query(ctx, `query($n: String!) { apps(first: 100, where: {name: $n, stateNEQ: STOPPED}, orderBy: {field: CREATED_AT, direction: DESC}) {
		edges { node { id state } } } }`, map[string]any{"n": arg}, &out)
	if err != nil {
		return "", err
	}
	id := ""
	for _, e := range out.Apps.Edges {
		if e.Node.State == "DEPLOYED" {
			return e.Node.ID, nil
		}
		if id == "" {
			id = e.Node.ID
		}
	}
	if id == "" {
		return "", fmt.Errorf("NOT_FOUND: no app named %q is deployed or running (levers9 app list shows them)", arg)
	}
	return id, nil
}

// stopApps stops each app of args, or only version v of the one app.
func stopApps(ctx context.Context, c clientFlags, args []string, v int, stdout, stderr io.Writer) int {
	return eachID(args, stdout, stderr, "levers9 app stop", func(arg string) (string, error) {
		id, err := resolveApp(ctx, c, arg)
		if err != nil {
			return "", err
		}
		var out struct{ StopApp, StopAppVersion appRow }
		if v > 0 {
			err = c.query(ctx, `mutation($id: ID!, $v: Int!) { stopAppVersion(id: $id, version: $v) { `+appFields+` } }`, map[string]any{"id": id, "v": v}, &out)
			r := out.StopAppVersion
			return fmt.Sprintf("%s %s: v%d stopped; %s, live v%d", r.ID, r.Name, v, r.State, r.LiveVersion), err
		}
		err = c.query(ctx, `mutation($id: ID!) { stopApp(id: $id) { `+appFields+` } }`, map[string]any{"id": id}, &out)
		return fmt.Sprintf("%s %s (%s)", out.StopApp.ID, out.StopApp.State, orDash(out.StopApp.StopReason)), err
	})
}

// rollbackApp points app arg's alias at version v (0: the one before).
func rollbackApp(ctx context.Context, c clientFlags, arg string, v int, stdout, stderr io.Writer) int {
	id, err := resolveApp(ctx, c, arg)
	if err != nil {
		fmt.Fprintf(stderr, "levers9 app rollback %s: %v\n", arg, err)
		return exitError
	}
	var version any
	if v > 0 {
		version = v
	}
	var out struct{ RollbackApp appRow }
	if err := c.query(ctx, `mutation($id: ID!, $v: Int) { rollbackApp(id: $id, version: $v) { `+appFields+` } }`,
		map[string]any{"id": id, "v": version}, &out); err != nil {
		fmt.Fprintf(stderr, "levers9 app rollback %s: %v\n", arg, err)
		return exitError
	}
	r := out.RollbackApp
	fmt.Fprintf(stdout, "%s %s: live v%d (latest v%d)\n", r.ID, r.Name, r.LiveVersion, r.Version)
	return exitOK
}

// appJob is the job of one container of an app.
type appJob struct {
	job, function string
	version       int
}

// appJobs are the jobs of app id's containers (of version v; 0: all), and
// the app's state.
func appJobs(ctx context.Context, c clientFlags, id string, v int) ([]appJob, string, error) {
	var out struct {
		Node *struct {
			ID, State string
			Functions []struct {
				Name       string
				Version    int
				Containers []struct{ JobID *string }
			}
		}
	}
	err := c.query(ctx, `query($id: ID!) { node(id: $id) { ... on App { id state functions { name version containers { jobID } } } } }`,
		map[string]any{"id": id}, &out)
	if err != nil {
		return nil, "", err
	}
	if out.Node == nil || out.Node.ID == "" {
		return nil, "", fmt.Errorf("NOT_FOUND: app %s not found", id)
	}
	var jobs []appJob
	for _, f := range out.Node.Functions {
		if v > 0 && f.Version != v {
			continue
		}
		for _, ct := range f.Containers {
			if ct.JobID != nil && *ct.JobID != "" {
				jobs = append(jobs, appJob{job: *ct.JobID, function: f.Name, version: f.Version})
			}
		}
	}
	return jobs, out.Node.State, nil
}

// appLogsPoll is how often levers9 app logs -f looks for new containers.
var appLogsPoll = 5 * time.Second

// appLogs prints the lines of app arg's containers' jobs, each line headed
// by its function, version and job; with follow, it follows them and those
// of containers started later until the app stops or Ctrl-C.
func appLogs(ctx context.Context, c clientFlags, arg string, v int, follow bool, stdout, stderr io.Writer) int {
	id, err := resolveApp(ctx, c, arg)
	if err != nil {
		fmt.Fprintf(stderr, "levers9 app logs %s: %v\n", arg, err)
		return exitError
	}
	var mu sync.Mutex
	printer := func(j appJob) func(logLine) {
		head := fmt.Sprintf("%s/v%d %s ", j.function, j.version, j.job)
		return func(l logLine) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprint(stdout, head)
			printLine(stdout, l)
		}
	}
	if !follow {
		jobs, _, err := appJobs(ctx, c, id, v)
		if err != nil {
			fmt.Fprintf(stderr, "levers9 app logs %s: %v\n", arg, err)
			return exitError
		}
		code := exitOK
		for _, j := range jobs {
			if err := c.printLogs(ctx, j.job, 0, 1, printer(j)); err != nil {
				fmt.Fprintf(stderr, "levers9 app logs %s: job %s: %v\n", arg, j.job, err)
				code = exitError
			}
		}
		return code
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	started := map[string]bool{}
	tick := time.NewTicker(appLogsPoll)
	defer tick.Stop()
	for {
		jobs, state, err := appJobs(ctx, c, id, v)
		if ctx.Err() != nil {
			return exitOK
		}
		if err != nil {
			fmt.Fprintf(stderr, "levers9 app logs %s: %v\n", arg, err)
			return exitError
		}
		for _, j := range jobs {
			if started[j.job] {
				continue
			}
			started[j.job] = true
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.followLogs(ctx, j.job, 1, printer(j)); err != nil && ctx.Err() == nil {
					mu.Lock()
					fmt.Fprintf(stderr, "levers9 app logs %s: job %s: %v\n", arg, j.job, err)
					mu.Unlock()
				}
			}()
		}
		// A stopped app starts no containers: what runs is followed to
		// its end.
		if state == "STOPPED" {
			return exitOK
		}
		select {
		case <-ctx.Done():
			return exitOK
		case <-tick.C:
		}
	}
}

// newQueueCommand is levers9 queue requeue: task-queue items.
func newQueueCommand(a *app) *cobra.Command {
	const usageText = "usage: levers9 queue requeue TASK...\n"
	var pending pendingFlags
	requeue := &cobra.Command{Use: "requeue TASK...", Short: "put dead task-queue items back in their queue, attempts counted afresh",
		ValidArgsFunction: cobra.NoFileCompletions}
	requeue.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) == 0 {
			fmt.Fprint(a.stderr, usageText)
			return exitUsage
		}
		return eachID(args, a.stdout, a.stderr, "levers9 queue requeue", func(id string) (string, error) {
			var out struct{ RequeueTask struct{ ID, State string } }
			err := c.query(cmd.Context(), `mutation($id: ID!) { requeueTask(id: $id) { id state } }`, map[string]any{"id": id}, &out)
			return out.RequeueTask.ID + " " + out.RequeueTask.State, err
		})
	})
	cmd := groupCommand(a, "queue", "pending jobs and why they wait; queue requeue: task-queue items", usageText, client(requeue, false))
	cmd.Use = "queue [requeue TASK...]"
	cmd.Long = ""
	cmd.Flags().StringVarP(&pending.queue, "queue", "q", "", "only the jobs of this queue")
	cmd.Flags().StringVarP(&pending.output, "output", "o", "", "wide: also the project and the services' CPUs and memory")
	cmd.Flags().BoolVarP(&pending.watch, "watch", "w", false, "redraw the table as it changes, until Ctrl-C (which exits 0)")
	cmd.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) > 0 || (pending.output != "" && pending.output != "wide") || (pending.watch && a.json) {
			fmt.Fprintf(a.stderr, "usage: levers9 queue [-q QUEUE] [-o wide] [--watch] [--json]\n       %s", usageText[len("usage: "):])
			return exitUsage
		}
		return pending.run(cmd.Context(), c, a.json, a.stdout, a.stderr)
	})
	return client(cmd, true)
}
