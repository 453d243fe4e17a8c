// Command withdocker runs a command with a Docker daemon available,
// starting a private one when none answers and stopping it afterwards:
//
//	go run ./internal/dockertest/withdocker -- go test ./...
//
// The command's exit code is passed through.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/levers9/levers9/internal/dockertest"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: withdocker -- CMD [ARGS...]")
		return 2
	}
	stop, err := dockertest.EnsureDaemon(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "withdocker:", err)
		return 1
	}
	defer stop()

	// The command gets the terminal's signals itself; we only outlive it
	// to stop the daemon. (Notify, not Ignore: ignored signals would be
	// ignored by the command too.)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		if code := exit.ExitCode(); code >= 0 {
			return code
		}
		return 1
	default:
		fmt.Fprintln(os.Stderr, "withdocker:", err)
		return 1
	}
}
