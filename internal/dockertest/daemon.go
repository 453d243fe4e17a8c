package dockertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Where a daemon started by EnsureDaemon keeps its state. Images stay
// across runs, so the test image is built once per machine.
const (
	DaemonPath     = "/usr/sbin/dockerd"
	DaemonDataRoot = "/var/lib/levers9-docker"
	daemonPidfile  = "/run/levers9-dockerd.pid"
	// AddressPool gives every job network a /24 of its own: Docker's
	// default pools hold about 30 networks, fewer than the jobs the tests
	// run at once (each job is a network).
	AddressPool = "base=10.213.0.0/16,size=24"
	daemonWait  = 60 * time.Second
)

// EnsureDaemon makes sure a Docker daemon answers. When the environment
// names no other host and nothing answers on the default socket, it starts
// dockerd (Debian's docker.io) and waits until it answers; stop then ends
// that daemon. stop does nothing when the daemon was already there.
func EnsureDaemon(ctx context.Context) (stop func(), err error) {
	nothing := func() {}
	cli, err := NewClient()
	if err != nil {
		return nothing, err
	}
	defer cli.Close()
	if Ping(ctx, cli) == nil {
		return nothing, nil
	}
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		return nothing, fmt.Errorf("the Docker daemon at DOCKER_HOST=%s does not answer", h)
	}
	if _, err := os.Stat(DaemonPath); err != nil {
		return nothing, fmt.Errorf("no Docker daemon answers and %s is missing (apt-get install docker.io): %w", DaemonPath, err)
	}
	logFile, err := os.CreateTemp("", "levers9-dockerd-*.log")
	if err != nil {
		return nothing, fmt.Errorf("dockerd log: %w", err)
	}
	cmd := exec.Command(DaemonPath, "--data-root", DaemonDataRoot, "--pidfile", daemonPidfile,
		"--default-address-pool", AddressPool)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group: a ^C meant for the tests does not reach it
	// before stop does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nothing, fmt.Errorf("starting dockerd: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = logFile.Close()
		_ = os.Remove(logFile.Name())
	}

	deadline := time.Now().Add(daemonWait)
	for {
		if Ping(ctx, cli) == nil {
			return stop, nil
		}
		select {
		case <-exited:
			return nothing, fmt.Errorf("dockerd exited before answering: %s", tail(logFile.Name()))
		case <-ctx.Done():
			stop()
			return nothing, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return nothing, errors.New("dockerd did not answer within " + daemonWait.String())
		}
	}
}

// tail is the end of a log file, for error messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return s
}
