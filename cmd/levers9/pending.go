package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// pendingFlags are the flags of levers9 queue: the pending jobs, as
// Slurm's squeue shows them (oldest first: the next to start on top).
type pendingFlags struct {
	queue, output string
	watch         bool
}

// run lists the pending jobs, once or watched.
func (f pendingFlags) run(ctx context.Context, c clientFlags, asJSON bool, stdout, stderr io.Writer) int {
	where := map[string]any{"status": "PENDING"}
	if f.queue != "" {
		where["hasQueueWith"] = []map[string]any{{"name": f.queue}}
	}
	list := func(ctx context.Context) ([]jobRow, error) { return fetchJobs(ctx, c, where, 0, false) }
	draw := func(w io.Writer, jobs []jobRow) error { return printPending(w, jobs, f.output == "wide", time.Now()) }
	if f.watch {
		return watchTable(ctx, "levers9 queue", list, draw, isTerminal(stdout), stdout, stderr)
	}
	return listTable(ctx, "levers9 queue", list, draw, asJSON, stdout, stderr)
}

// printPending prints pending jobs with how long each has waited and the
// scheduler's reason, squeue's REASON column.
func printPending(out io.Writer, jobs []jobRow, wide bool, now time.Time) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if wide {
		fmt.Fprintln(w, "ID\tNAME\tQUEUE\tOWNER\tPROJECT\tGPUS\tCPUS\tMEMORY\tWAITING\tREASON")
	} else {
		fmt.Fprintln(w, "ID\tNAME\tQUEUE\tOWNER\tGPUS\tWAITING\tREASON")
	}
	for _, j := range jobs {
		waiting := formatWait(now.Sub(j.CreatedAt))
		if !wide {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, orDash(j.Name), j.Queue.Name, orDash(j.Owner.Email),
				orDash(j.gpus()), waiting, orDash(j.StatusReason))
			continue
		}
		project := "-"
		if j.Project != nil {
			project = j.Project.Name
		}
		cpu, mem := 0.0, 0
		for _, s := range j.Services {
			cpu += s.CPU
			mem += s.MemoryMib
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%g\t%d MiB\t%s\t%s\n", j.ID, orDash(j.Name), j.Queue.Name, orDash(j.Owner.Email),
			project, orDash(j.gpus()), cpu, mem, waiting, orDash(j.StatusReason))
	}
	return w.Flush()
}

// formatWait is a wait rounded to what a person reads at a glance: 42s,
// 5m10s, 3h05m, 2d04h.
func formatWait(d time.Duration) string {
	d = max(d, 0).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}
