package main

import (
	"context"
	"flag"
	"fmt"
	"io"
)

// runCancel cancels jobs: levers9 cancel JOB [JOB...].
func runCancel(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c clientFlags
	fs := flag.NewFlagSet("levers9 cancel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.register(fs)
	if code, ok := c.parse(fs, args, stderr); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "usage: levers9 cancel JOB [JOB...]")
		return exitUsage
	}
	code := exitOK
	for _, id := range fs.Args() {
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
