// Command withpg runs a command with a private PostgreSQL cluster, so that a
// whole `go test ./...` shares one cluster instead of starting one per
// package:
//
//	go run ./internal/dbtest/withpg -- go test ./...
//
// The cluster URL is passed in $LEVERS9_TEST_POSTGRES_URL. If that is
// already set, the command runs against the existing cluster.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/levers9/levers9/internal/dbtest"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: withpg -- CMD [ARGS...]")
		return 2
	}

	// Catch signals from the start so an interrupt during cluster startup
	// still cleans up instead of orphaning the server.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)

	if os.Getenv(dbtest.EnvURL) == "" {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-sigs:
				cancel()
			case <-ctx.Done():
			}
		}()
		c, err := dbtest.StartCluster(ctx)
		interrupted := ctx.Err() != nil
		cancel()
		if interrupted {
			if c != nil {
				c.Stop()
			}
			return 130
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "withpg:", err)
			return 1
		}
		defer c.Stop()
		os.Setenv(dbtest.EnvURL, c.URL)
	}

	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "withpg:", err)
		return 127
	}
	// Forward signals so the child can shut down cleanly; we stop the
	// cluster once it has exited.
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exitErr):
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return exitErr.ExitCode()
	default:
		fmt.Fprintln(os.Stderr, "withpg:", err)
		return 1
	}
}
