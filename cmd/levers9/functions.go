package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// newTaskCommand is levers9 task show: one call of a serverless function.
func newTaskCommand(a *app) *cobra.Command {
	const showUsage = "usage: levers9 task show [--json] TASK"
	show := &cobra.Command{
		Use:               "show TASK",
		Short:             "a function call: its state, error and cold-start phases",
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	show.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) != 1 {
			fmt.Fprintln(a.stderr, showUsage)
			return exitUsage
		}
		return showTask(cmd.Context(), c, args[0], a.json, a.stdout, a.stderr)
	})
	return groupCommand(a, "task", "a call of a serverless function", showUsage+"\n", client(show, true))
}

type taskPhases struct {
	QueuedAt         time.Time  `json:"queuedAt"`
	ScheduledAt      *time.Time `json:"scheduledAt"`
	ImageReadyAt     *time.Time `json:"imageReadyAt"`
	CodeFetchedAt    *time.Time `json:"codeFetchedAt"`
	ProcessStartedAt *time.Time `json:"processStartedAt"`
	ImportedAt       *time.Time `json:"importedAt"`
	StartedAt        *time.Time `json:"startedAt"`
	FinishedAt       *time.Time `json:"finishedAt"`
}

type taskRow struct {
	ID             string  `json:"id"`
	State          string  `json:"state"`
	Attempt        int     `json:"attempt"`
	MaxAttempts    int     `json:"maxAttempts"`
	MapID          *string `json:"mapID"`
	MapIndex       int     `json:"mapIndex"`
	ErrorKind      string  `json:"errorKind"`
	ErrorMessage   string  `json:"errorMessage"`
	ErrorTraceback string  `json:"errorTraceback"`
	WaitReason     *string `json:"waitReason"`
	Function       struct {
		ID   string `json:"id"`
		Name string `json:"name"`
		App  struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"app"`
	} `json:"function"`
	Phases taskPhases `json:"phases"`
}

const taskFields = `id state attempt maxAttempts mapID mapIndex errorKind errorMessage errorTraceback waitReason
  function { id name app { id name } }
  phases { queuedAt scheduledAt imageReadyAt codeFetchedAt processStartedAt importedAt startedAt finishedAt }`

// showTask prints call id: what it is, how it ended, and when it passed
// each step from queued to finished.
func showTask(ctx context.Context, c clientFlags, id string, asJSON bool, stdout, stderr io.Writer) int {
	var out struct{ Node *taskRow }
	if err := c.query(ctx, `query($id: ID!) { node(id: $id) { ... on Task { `+taskFields+` } } }`, map[string]any{"id": id}, &out); err != nil {
		fmt.Fprintln(stderr, "levers9 task show:", err)
		return exitError
	}
	if out.Node == nil || out.Node.ID == "" {
		fmt.Fprintf(stderr, "levers9 task show: NOT_FOUND: task %s not found\n", id)
		return exitError
	}
	t := out.Node
	if asJSON {
		return printJSON(stdout, stderr, t)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fn := t.Function.Name + " (" + t.Function.ID + ")"
	if t.Function.App.Name != "" {
		fn = t.Function.App.Name + "." + fn
	}
	rows := [][2]string{{"ID", t.ID}, {"Function", fn}, {"State", t.State},
		{"Attempt", fmt.Sprintf("%d of %d", t.Attempt, t.MaxAttempts)}}
	if t.MapID != nil {
		rows = append(rows, [2]string{"Map", fmt.Sprintf("%s item %d", *t.MapID, t.MapIndex)})
	}
	if t.WaitReason != nil {
		rows = append(rows, [2]string{"Waiting", *t.WaitReason})
	}
	if t.ErrorKind != "" {
		rows = append(rows, [2]string{"Error", t.ErrorKind + ": " + firstLine(t.ErrorMessage)})
	}
	for _, kv := range rows {
		fmt.Fprintf(w, "%s:\t%s\n", kv[0], kv[1])
	}
	fmt.Fprintln(w, "\nPHASE\tAT\tSINCE QUEUED")
	p := t.Phases
	for _, ph := range []struct {
		name string
		at   *time.Time
	}{
		{"queued", &p.QueuedAt}, {"scheduled", p.ScheduledAt}, {"image ready", p.ImageReadyAt},
		{"code fetched", p.CodeFetchedAt}, {"process started", p.ProcessStartedAt}, {"imported", p.ImportedAt},
		{"started", p.StartedAt}, {"finished", p.FinishedAt},
	} {
		if ph.at == nil {
			fmt.Fprintf(w, "%s\t-\t-\n", ph.name)
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", ph.name, ph.at.Local().Format("2006-01-02 15:04:05.000"), sinceQueued(p.QueuedAt, *ph.at))
	}
	if err := w.Flush(); err != nil {
		return exitError
	}
	if t.ErrorTraceback != "" {
		fmt.Fprintf(stdout, "\n%s\n", strings.TrimRight(t.ErrorTraceback, "\n"))
	}
	return exitOK
}

// sinceQueued is at's distance from the queueing, to the millisecond; a
// phase a container passed before this call was queued (a warm container)
// shows as negative.
func sinceQueued(queued, at time.Time) string {
	d := at.Sub(queued).Round(time.Millisecond)
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
