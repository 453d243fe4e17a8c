package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	EstimatePerMinute json.Number `json:"estimatePerMinute"`
	Services          []struct {
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
	} `json:"services"`
}

const jobFields = `id name status statusReason createdAt startedAt finishedAt queue { name } project { name } owner { email }
  estimatePerMinute services { name status statusReason command cpu memoryMib gpus gpuType exitCode node { name } }`

// newJobsCommand lists jobs, newest first: levers9 jobs [--status S] [-n N] [--json].
func newJobsCommand(a *app) *cobra.Command {
	var status string
	var limit int
	cmd := &cobra.Command{
		Use:               "jobs [--status STATUS] [-n N] [--json]",
		Short:             "your environment's jobs, newest first",
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	cmd.Flags().StringVar(&status, "status", "", "only jobs with this status (PENDING, RUNNING, COMPLETE, ERROR, CANCELLED)")
	cmd.Flags().IntVarP(&limit, "limit", "n", 50, "how many jobs, newest first (0: all)")
	cmd.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) != 0 || limit < 0 {
			fmt.Fprintln(a.stderr, "usage: levers9 jobs [--status STATUS] [-n N] [--json]")
			return exitUsage
		}
		return listJobs(cmd.Context(), c, status, limit, a.json, a.stdout, a.stderr)
	})
	return client(cmd, true)
}

// listJobs prints up to limit jobs (0: all) with status ("": any).
func listJobs(ctx context.Context, c clientFlags, status string, limit int, asJSON bool, stdout, stderr io.Writer) int {
	where := map[string]any{}
	if status != "" {
		where["status"] = strings.ToUpper(status)
	}
	var jobs []jobRow
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
  jobs(first: $n, after: $a, where: $w, orderBy: {field: CREATED_AT, direction: DESC}) {
    edges { node { `+jobFields+` } } pageInfo { hasNextPage endCursor } } }`,
			map[string]any{"n": page, "a": after, "w": where}, &out)
		if err != nil {
			fmt.Fprintln(stderr, "levers9 jobs:", err)
			return exitError
		}
		for _, e := range out.Jobs.Edges {
			jobs = append(jobs, e.Node)
		}
		if !out.Jobs.PageInfo.HasNextPage {
			break
		}
		after = out.Jobs.PageInfo.EndCursor
	}
	if asJSON {
		if jobs == nil {
			jobs = []jobRow{}
		}
		return printJSON(stdout, stderr, jobs)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tNAME\tSTATUS\tQUEUE\tCREATED\tREASON")
	for _, j := range jobs {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, orDash(j.Name), j.Status, j.Queue.Name,
			j.CreatedAt.Local().Format(time.DateTime), orDash(j.StatusReason))
	}
	if err := w.Flush(); err != nil {
		return exitError
	}
	return exitOK
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
