package main

import (
	"fmt"
	"os"

	"github.com/levers9/levers9/agent/runtime"
)

// supervisorCommand is the hidden subcommand the process runtime starts
// each service under: this binary again (see runtime.Supervise).
const supervisorCommand = runtime.SupervisorArg

// runSupervise is `levers9 __supervise …`.
func runSupervise(args []string) int { return runtime.Supervise(args) }

// supervisorArgv is the process runtime's Supervisor: this binary and the
// hidden subcommand.
func supervisorArgv() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program for the service supervisor: %w", err)
	}
	return []string{exe, supervisorCommand}, nil
}
