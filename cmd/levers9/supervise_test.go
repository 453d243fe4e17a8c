package main

import (
	"os"
	"testing"

	"github.com/levers9/levers9/agent/supervise"
)

// TestMain lets this test binary stand in for levers9 as the process
// runtime's supervisor (supervisorArgv runs this binary again with
// supervise.Arg): without it the child would run the whole test suite,
// whose agents start supervisors of their own, without end.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == supervise.Arg {
		os.Exit(supervise.Supervise(os.Args[2:]))
	}
	os.Exit(m.Run())
}
