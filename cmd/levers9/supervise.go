package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/levers9/levers9/agent/supervise"
)

// supervisorCommand is the hidden subcommand the process runtime runs
// services under: this binary again (see supervise.Supervise).
const supervisorCommand = supervise.Arg

// newSupervisorCommand is `levers9 __supervise …`, not in the usage: its
// arguments are the supervisor's own.
func newSupervisorCommand() *cobra.Command {
	return &cobra.Command{
		Use: supervisorCommand, Hidden: true, DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error { return codeErr(supervise.Supervise(args)) },
	}
}

// supervisorProgram is the small supervisor binary (cmd/levers9-supervise)
// looked for beside this one.
const supervisorProgram = "levers9-supervise"

// supervisorArgv is the process runtime's Supervisor: levers9-supervise
// when it lies beside this binary (it starts in a few milliseconds, this
// whole binary in tens: paid on every supervisor start), else this
// binary's hidden subcommand.
func supervisorArgv() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program for the service supervisor: %w", err)
	}
	small := filepath.Join(filepath.Dir(exe), supervisorProgram)
	if fi, err := os.Stat(small); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return []string{small}, nil
	}
	return []string{exe, supervisorCommand}, nil
}
