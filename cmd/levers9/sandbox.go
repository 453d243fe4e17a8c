package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

const sandboxUsage = `usage: levers9 sandbox list [--json]
       levers9 sandbox terminate ID...
Sandboxes are created from Python (levers9.Sandbox.create).
`

// newSandboxCommand is levers9 sandbox list|terminate: the jobs of kind
// SANDBOX; terminating one cancels its job.
func newSandboxCommand(a *app) *cobra.Command {
	list := &cobra.Command{Use: "list", Short: "sandboxes, newest first, with their tunnels while running",
		ValidArgsFunction: cobra.NoFileCompletions}
	list.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) != 0 {
			fmt.Fprint(a.stderr, sandboxUsage)
			return exitUsage
		}
		return listSandboxes(cmd.Context(), c, a.json, a.stdout, a.stderr)
	})
	terminate := &cobra.Command{Use: "terminate ID...", Short: "terminate sandboxes (cancel their jobs)",
		ValidArgsFunction: cobra.NoFileCompletions}
	terminate.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) == 0 {
			fmt.Fprint(a.stderr, sandboxUsage)
			return exitUsage
		}
		return cancelJobs(cmd.Context(), c, args, a.stdout, a.stderr)
	})
	return groupCommand(a, "sandbox", "sandboxes: containers driven from Python (exec, files, tunnels)", sandboxUsage,
		client(list, true), client(terminate, false))
}

// sandboxRow is one sandbox as listed.
type sandboxRow struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Status    string     `json:"status"`
	CreatedAt time.Time  `json:"createdAt"`
	StartedAt *time.Time `json:"startedAt"`
	Owner     struct {
		Email string `json:"email"`
	} `json:"owner"`
	Tunnels []struct {
		Port int    `json:"port"`
		URL  string `json:"url"`
	} `json:"tunnels"`
}

const sandboxQuery = `{ jobs(first: 1000, orderBy: {field: CREATED_AT, direction: DESC}, where: {kind: SANDBOX}) {
	edges { node { id name status createdAt startedAt owner { email } tunnels { port url } } } } }`

func listSandboxes(ctx context.Context, c clientFlags, asJSON bool, stdout, stderr io.Writer) int {
	rows, err := listRows[sandboxRow](ctx, c, "jobs", sandboxQuery)
	if err != nil {
		fmt.Fprintln(stderr, "levers9 sandbox list:", err)
		return exitError
	}
	if asJSON {
		return printJSON(stdout, stderr, rows)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tNAME\tSTATUS\tOWNER\tSTARTED\tTUNNELS")
	for _, r := range rows {
		started := "-"
		if r.StartedAt != nil {
			started = r.StartedAt.Local().Format(time.DateTime)
		}
		var tunnels []string
		for _, t := range r.Tunnels {
			tunnels = append(tunnels, strconv.Itoa(t.Port)+"="+t.URL)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, orDash(r.Name), r.Status, orDash(r.Owner.Email), started,
			orDash(strings.Join(tunnels, " ")))
	}
	if err := w.Flush(); err != nil {
		return exitError
	}
	return exitOK
}
