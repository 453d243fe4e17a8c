// Command levers9-supervise is the small program the process runtime runs
// services under (see supervise.Supervise): a subreaper that runs the
// commands of the services it is sent, one after another, and takes every
// process of each down with it or with the agent. It is the levers9
// binary's `__supervise` subcommand without the rest of the server:
// starting it costs a few milliseconds instead of the tens the whole
// binary's initialisation takes, on every supervisor start. The agent uses
// it when it lies beside the levers9 binary.
package main

import (
	"os"

	"github.com/levers9/levers9/agent/supervise"
)

func main() { os.Exit(supervise.Supervise(os.Args[1:])) }
