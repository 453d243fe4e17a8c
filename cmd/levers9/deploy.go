package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newPythonAppCommand is levers9 deploy and levers9 serve: the embedded
// SDK's python3 -m levers9 deploy|serve, like levers9 run app.py.
func newPythonAppCommand(a *app, name string) *cobra.Command {
	short := map[string]string{
		"deploy": "deploy a Python app: a new version of each of its deployments, serving until stopped",
		"serve":  "serve a Python app at temporary URLs, redeployed on each save, removed on Ctrl-C",
	}[name]
	cmd := &cobra.Command{
		Use:   name + " APP.py [ARGS...]",
		Short: short,
		Long: short + ".\nIt runs python3 -m levers9 " + name + " APP.py (the levers9 package comes with this binary); " +
			"the app's decorators say its functions, endpoints, queues, schedules and secrets.",
	}
	// Flags end at the script: everything after it is the SDK's.
	cmd.Flags().SetInterspersed(false)
	cmd.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) == 0 || !isPythonTarget(args[0]) {
			fmt.Fprintf(a.stderr, "usage: levers9 %s APP.py [ARGS...]\n", name)
			return exitUsage
		}
		return runPythonCommand(cmd.Context(), c, name, args, a.stdin, a.stdout, a.stderr)
	})
	return client(cmd, false)
}
