package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// newCancelCommand cancels jobs: levers9 cancel JOB [JOB...].
func newCancelCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:               "cancel JOB...",
		Short:             "cancel jobs",
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	cmd.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) == 0 {
			fmt.Fprintln(a.stderr, "usage: levers9 cancel JOB [JOB...]")
			return exitUsage
		}
		return cancelJobs(cmd.Context(), c, args, a.stdout, a.stderr)
	})
	return client(cmd, false)
}

// cancelJobs cancels every job of ids; it fails when any failed.
func cancelJobs(ctx context.Context, c clientFlags, ids []string, stdout, stderr io.Writer) int {
	code := exitOK
	for _, id := range ids {
		var out struct {
			CancelJob struct{ ID, Status, StatusReason string }
		}
		err := c.query(ctx, `mutation($id: ID!) { cancelJob(id: $id) { id status statusReason } }`, map[string]any{"id": id}, &out)
		if err != nil {
			fmt.Fprintf(stderr, "levers9 cancel %s: %v\n", id, err)
			code = exitError
			continue
		}
		fmt.Fprintf(stdout, "%s %s (%s)\n", out.CancelJob.ID, out.CancelJob.Status, out.CancelJob.StatusReason)
	}
	return code
}
