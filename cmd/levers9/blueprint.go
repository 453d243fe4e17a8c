package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

const blueprintUsage = `usage: levers9 blueprint list [--json]
Blueprints are declared and built from Python (levers9.Blueprint).
`

// newBlueprintCommand is levers9 blueprint list: the tenant's blueprints.
func newBlueprintCommand(a *app) *cobra.Command {
	list := &cobra.Command{Use: "list", Short: "blueprints, newest first: state, key, steps built, size",
		ValidArgsFunction: cobra.NoFileCompletions}
	list.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) != 0 {
			fmt.Fprint(a.stderr, blueprintUsage)
			return exitUsage
		}
		return listBlueprints(cmd.Context(), c, a.json, a.stdout, a.stderr)
	})
	return groupCommand(a, "blueprint", "blueprints: what is installed in containers, built once per step", blueprintUsage,
		client(list, true))
}

// blueprintRow is one blueprint as listed.
type blueprintRow struct {
	ID          string    `json:"id"`
	Key         string    `json:"key"`
	State       string    `json:"state"`
	Source      string    `json:"source"`
	Failure     string    `json:"failure"`
	StepsBuilt  int       `json:"stepsBuilt"`
	ExportBytes int64     `json:"exportBytes"`
	CreatedAt   time.Time `json:"createdAt"`
	Steps       []struct {
		Kind    string `json:"kind"`
		Summary string `json:"summary"`
	} `json:"steps"`
	BuildJob *struct {
		ID string `json:"id"`
	} `json:"buildJob"`
}

const blueprintQuery = `{ blueprints(first: 1000, orderBy: {field: CREATED_AT, direction: DESC}) {
	edges { node { id key state source failure stepsBuilt exportBytes createdAt steps { kind summary } buildJob { id } } } } }`

func listBlueprints(ctx context.Context, c clientFlags, asJSON bool, stdout, stderr io.Writer) int {
	rows, err := listRows[blueprintRow](ctx, c, "blueprints", blueprintQuery)
	if err != nil {
		fmt.Fprintln(stderr, "levers9 blueprint list:", err)
		return exitError
	}
	if asJSON {
		return printJSON(stdout, stderr, rows)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tKEY\tSTATE\tSTEPS\tBUILT\tSIZE\tBUILD JOB\tLAST STEP\tCREATED")
	for _, r := range rows {
		key := r.Key
		if len(key) > 12 {
			key = key[:12]
		}
		size, job, last := "-", "-", "-"
		if r.ExportBytes > 0 {
			size = strconv.FormatFloat(float64(r.ExportBytes)/(1<<20), 'f', 1, 64) + " MiB"
		}
		if r.BuildJob != nil {
			job = r.BuildJob.ID
		}
		if len(r.Steps) > 0 {
			last = r.Steps[len(r.Steps)-1].Summary
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", r.ID, key, r.State, len(r.Steps), r.StepsBuilt, size, job, last,
			r.CreatedAt.Local().Format(time.DateTime))
	}
	if err := w.Flush(); err != nil {
		return exitError
	}
	return exitOK
}
