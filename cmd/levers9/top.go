package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// topRow is a node as levers9 top shows it: nodeRow and the jobs of the
// services placed on it (those the viewer may see).
type topRow struct {
	nodeRow
	Services []struct {
		Status string `json:"status"`
		Job    struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"job"`
	} `json:"services"`
}

// newTopCommand is levers9 top: the nodes with their GPUs booked and free,
// CPUs and memory, and the jobs they run; --watch redraws.
func newTopCommand(a *app) *cobra.Command {
	var watch bool
	cmd := &cobra.Command{
		Use:               "top [--watch] [--json]",
		Short:             "nodes: GPUs booked and free, CPUs, memory and the jobs running on them",
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "redraw the table as it changes, until Ctrl-C (which exits 0)")
	cmd.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) != 0 || (watch && a.json) {
			fmt.Fprintln(a.stderr, "usage: levers9 top [--watch] [--json]  (--watch prints no JSON)")
			return exitUsage
		}
		list := func(ctx context.Context) ([]topRow, error) {
			return listRows[topRow](ctx, c, "nodes", `{ nodes(first: 1000, orderBy: {field: NAME, direction: ASC}) { edges { node {
  id name status drain inventory { cpus memoryMiB gpus { type count } runtime }
  booked { cpu memoryMiB gpus { type count } } free { cpu memoryMiB gpus { type count } }
  services { status job { id name } } } } } }`)
		}
		if watch {
			return watchTable(cmd.Context(), "levers9 top", list, printTop, isTerminal(a.stdout), a.stdout, a.stderr)
		}
		return listTable(cmd.Context(), "levers9 top", list, printTop, a.json, a.stdout, a.stderr)
	})
	return client(cmd, true)
}

// printTop prints one line per node: GPUs booked/total per type, CPUs and
// memory booked of the inventory, and the running jobs by name.
func printTop(out io.Writer, rows []topRow) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tSTATUS\tGPUS BOOKED\tGPUS FREE\tCPUS BOOKED\tMEMORY BOOKED\tJOBS\tRUNNING")
	for _, n := range rows {
		status := n.Status
		if n.Drain {
			status += ",draining"
		}
		var booked, free []string
		for _, g := range n.Inventory.GPUs {
			b, f := 0, 0
			for _, x := range n.Booked.GPUs {
				if x.Type == g.Type {
					b = x.Count
				}
			}
			for _, x := range n.Free.GPUs {
				if x.Type == g.Type {
					f = x.Count
				}
			}
			booked = append(booked, fmt.Sprintf("%s %d/%d", g.Type, b, g.Count))
			free = append(free, fmt.Sprintf("%s %d", g.Type, f))
		}
		var jobs []string
		for _, s := range n.Services {
			label := first(s.Job.Name, s.Job.ID)
			if s.Status == "RUNNING" && !slices.Contains(jobs, label) {
				jobs = append(jobs, label)
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%g/%g\t%d/%d MiB\t%d\t%s\n", n.Name, status,
			orDash(strings.Join(booked, ", ")), orDash(strings.Join(free, ", ")),
			n.Booked.CPU, n.Inventory.CPUs, n.Booked.MemoryMiB, n.Inventory.MemoryMiB,
			len(jobs), orDash(strings.Join(jobs, ", ")))
	}
	return w.Flush()
}
