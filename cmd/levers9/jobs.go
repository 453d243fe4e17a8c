package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// jobRow is a job as `jobs` and `job show` print it; JSON keys follow the
// GraphQL field names.
type jobRow struct {
	ID           string     `json:"id"`
	Name         string     `json:"name"`
	Status       string     `json:"status"`
	StatusReason string     `json:"statusReason"`
	CreatedAt    time.Time  `json:"createdAt"`
	StartedAt    *time.Time `json:"startedAt"`
	FinishedAt   *time.Time `json:"finishedAt"`
	Queue        struct {
		Name string `json:"name"`
	} `json:"queue"`
	Project *struct {
		Name string `json:"name"`
	} `json:"project"`
	Owner struct {
		Email string `json:"email"`
	} `json:"owner"`
	EstimatePerMinute json.Number  `json:"estimatePerMinute"`
	Services          []serviceRow `json:"services"`
}

// serviceRow is one service of a jobRow.
type serviceRow struct {
	Name         string   `json:"name"`
	Status       string   `json:"status"`
	StatusReason string   `json:"statusReason"`
	Command      []string `json:"command"`
	CPU          float64  `json:"cpu"`
	MemoryMib    int      `json:"memoryMib"`
	Gpus         int      `json:"gpus"`
	GpuType      string   `json:"gpuType"`
	ExitCode     *int     `json:"exitCode"`
	Node         *struct {
		Name string `json:"name"`
	} `json:"node"`
}

const jobFields = `id name status statusReason createdAt startedAt finishedAt queue { name } project { name } owner { email }
  estimatePerMinute services { name status statusReason command cpu memoryMib gpus gpuType exitCode node { name } }`

// newJobsCommand lists jobs, newest first:
// levers9 jobs [--status S] [-n N] [-o wide] [--watch] [--json].
func newJobsCommand(a *app) *cobra.Command {
	var f jobsFlags
	cmd := &cobra.Command{
		Use:               "jobs [--status STATUS] [-n N] [-o wide] [--watch] [--json]",
		Short:             "your environment's jobs, newest first",
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	cmd.Flags().StringVar(&f.status, "status", "", "only jobs with this status (PENDING, RUNNING, COMPLETE, ERROR, CANCELLED)")
	cmd.Flags().IntVarP(&f.limit, "limit", "n", 50, "how many jobs, newest first (0: all)")
	cmd.Flags().StringVarP(&f.output, "output", "o", "", "wide: also the owner, the nodes and the GPUs")
	cmd.Flags().BoolVarP(&f.watch, "watch", "w", false, "redraw the table as it changes, until Ctrl-C (which exits 0)")
	cmd.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) != 0 || f.limit < 0 || (f.output != "" && f.output != "wide") || (f.watch && a.json) {
			fmt.Fprintln(a.stderr, "usage: levers9 jobs [--status STATUS] [-n N] [-o wide] [--watch] [--json]  (-o takes only wide; --watch prints no JSON)")
			return exitUsage
		}
		where := map[string]any{}
		if f.status != "" {
			where["status"] = strings.ToUpper(f.status)
		}
		list := func(ctx context.Context) ([]jobRow, error) { return fetchJobs(ctx, c, where, f.limit, true) }
		draw := func(w io.Writer, jobs []jobRow) error { return printJobs(w, jobs, f.output == "wide") }
		if f.watch {
			return watchTable(cmd.Context(), "levers9 jobs", list, draw, isTerminal(a.stdout), a.stdout, a.stderr)
		}
		return listTable(cmd.Context(), "levers9 jobs", list, draw, a.json, a.stdout, a.stderr)
	})
	return client(cmd, true)
}

// jobsFlags are the flags of levers9 jobs.
type jobsFlags struct {
	status, output string
	limit          int
	watch          bool
}

// fetchJobs reads up to limit jobs (0: all) matching where, newest first
// (oldest first with newest false).
func fetchJobs(ctx context.Context, c clientFlags, where map[string]any, limit int, newest bool) ([]jobRow, error) {
	direction := "DESC"
	if !newest {
		direction = "ASC"
	}
	jobs := []jobRow{}
	var after any
	for limit == 0 || len(jobs) < limit {
		page := 500
		if limit > 0 {
			page = min(page, limit-len(jobs))
		}
		var out struct {
			Jobs struct {
				Edges    []struct{ Node jobRow }
				PageInfo struct {
					HasNextPage bool
					EndCursor   string
				}
			}
		}
		err := c.query(ctx, `query($n: Int!, $a: Cursor, $w: JobWhereInput) {
  jobs(first: $n, after: $a, where: $w, orderBy: {field: CREATED_AT, direction: `+direction+`}) {
    edges { node { `+jobFields+` } } pageInfo { hasNextPage endCursor } } }`,
			map[string]any{"n": page, "a": after, "w": where}, &out)
		if err != nil {
			return nil, err
		}
		for _, e := range out.Jobs.Edges {
			jobs = append(jobs, e.Node)
		}
		if !out.Jobs.PageInfo.HasNextPage {
			break
		}
		after = out.Jobs.PageInfo.EndCursor
	}
	return jobs, nil
}

// printJobs prints the jobs table; wide adds who, where and what.
func printJobs(out io.Writer, jobs []jobRow, wide bool) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if wide {
		fmt.Fprintln(w, "ID\tNAME\tSTATUS\tQUEUE\tOWNER\tNODE\tGPUS\tCREATED\tREASON")
	} else {
		fmt.Fprintln(w, "ID\tNAME\tSTATUS\tQUEUE\tCREATED\tREASON")
	}
	for _, j := range jobs {
		created := j.CreatedAt.Local().Format(time.DateTime)
		if wide {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, orDash(j.Name), j.Status, j.Queue.Name,
				orDash(j.Owner.Email), orDash(j.nodes()), orDash(j.gpus()), created, orDash(j.StatusReason))
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, orDash(j.Name), j.Status, j.Queue.Name, created, orDash(j.StatusReason))
	}
	return w.Flush()
}

// nodes are the distinct nodes the job's services are placed on.
func (j jobRow) nodes() string {
	var names []string
	for _, s := range j.Services {
		if s.Node != nil && !slices.Contains(names, s.Node.Name) {
			names = append(names, s.Node.Name)
		}
	}
	return strings.Join(names, ",")
}

// gpus is the job's GPUs per type, "2 H100" or "1 A10,4 H100"; "" for none.
func (j jobRow) gpus() string {
	count := map[string]int{}
	var types []string
	for _, s := range j.Services {
		if s.Gpus == 0 {
			continue
		}
		t := first(s.GpuType, "any")
		if _, ok := count[t]; !ok {
			types = append(types, t)
		}
		count[t] += s.Gpus
	}
	sort.Strings(types)
	var out []string
	for _, t := range types {
		out = append(out, fmt.Sprintf("%d %s", count[t], t))
	}
	return strings.Join(out, ",")
}

// newJobCommand is levers9 job show JOB [--json].
func newJobCommand(a *app) *cobra.Command {
	const showUsage = "usage: levers9 job show [--json] JOB"
	show := &cobra.Command{
		Use:               "show JOB",
		Short:             "a job and its services",
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	show.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) != 1 {
			fmt.Fprintln(a.stderr, showUsage)
			return exitUsage
		}
		return showJob(cmd.Context(), c, args[0], a.json, a.stdout, a.stderr)
	})
	return groupCommand(a, "job", "a job and its services", showUsage+"\n", client(show, true))
}

// showJob prints job id and its services.
func showJob(ctx context.Context, c clientFlags, id string, asJSON bool, stdout, stderr io.Writer) int {
	var out struct{ Node *jobRow }
	if err := c.query(ctx, `query($id: ID!) { node(id: $id) { ... on Job { `+jobFields+` } } }`, map[string]any{"id": id}, &out); err != nil {
		fmt.Fprintln(stderr, "levers9 job show:", err)
		return exitError
	}
	if out.Node == nil || out.Node.ID == "" {
		fmt.Fprintf(stderr, "levers9 job show: NOT_FOUND: job %s not found\n", id)
		return exitError
	}
	j := out.Node
	if asJSON {
		return printJSON(stdout, stderr, j)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	project := "-"
	if j.Project != nil {
		project = j.Project.Name
	}
	for _, kv := range [][2]string{
		{"ID", j.ID}, {"Name", orDash(j.Name)}, {"Status", j.Status}, {"Reason", orDash(j.StatusReason)},
		{"Queue", j.Queue.Name}, {"Project", project}, {"Owner", j.Owner.Email},
		{"Created", j.CreatedAt.Local().Format(time.DateTime)}, {"Started", timeOrDash(j.StartedAt)},
		{"Finished", timeOrDash(j.FinishedAt)}, {"Tokens/min", j.EstimatePerMinute.String()},
	} {
		fmt.Fprintf(w, "%s:\t%s\n", kv[0], kv[1])
	}
	fmt.Fprintln(w, "\nSERVICE\tSTATUS\tEXIT\tCPU\tMEMORY\tGPUS\tNODE\tCOMMAND\tREASON")
	for _, s := range j.Services {
		exit, node, gpus := "-", "-", fmt.Sprint(s.Gpus)
		if s.ExitCode != nil {
			exit = fmt.Sprint(*s.ExitCode)
		}
		if s.Node != nil {
			node = s.Node.Name
		}
		if s.GpuType != "" {
			gpus += " " + s.GpuType
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%g\t%d MiB\t%s\t%s\t%s\t%s\n", s.Name, s.Status, exit, s.CPU, s.MemoryMib, gpus, node,
			orDash(strings.Join(s.Command, " ")), orDash(s.StatusReason))
	}
	if err := w.Flush(); err != nil {
		return exitError
	}
	return exitOK
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Local().Format(time.DateTime)
}
