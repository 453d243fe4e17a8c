package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
)

// newPortForwardCommand forwards a local port to a port of a job's
// service through the server, like kubectl port-forward.
func newPortForwardCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "port-forward JOB [LOCAL_PORT:]SERVICE:PORT [LOCAL_PORT]",
		Short: "forward a local port to a port of a job's service (ssh, databases)",
		Long: `Listen on 127.0.0.1:LOCAL_PORT and connect each connection made to it to PORT
of the job's SERVICE, through the server (nodes take no inbound connections).
PORT is the port's name or number as the job declares it. Without LOCAL_PORT
(or with 0) a free port is chosen; the line "Forwarding from 127.0.0.1:N ->
SERVICE:PORT" says which. Runs until Ctrl-C.

A connection the server refuses (the job is not running, no such port) is
said here and closed; the others go on. Users who may see the job may
forward its ports.`,
		Example:           "  levers9 port-forward job_123 main:22 2222\n  levers9 port-forward job_123 5433:db:postgres",
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	cmd.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) < 2 || len(args) > 3 {
			fmt.Fprintf(a.stderr, "Usage: levers9 %s\n", cmd.Use)
			return exitUsage
		}
		f, err := parseForward(args[1:])
		if err != nil {
			fmt.Fprintf(a.stderr, "levers9 port-forward: %v\nUsage: levers9 %s\n", err, cmd.Use)
			return exitUsage
		}
		return portForward(cmd.Context(), c, args[0], f, a.stdout, a.stderr)
	})
	return client(cmd, false)
}

// forward is a port to forward: 127.0.0.1:local to port of service.
type forward struct {
	local   int    // 0: any free port
	service string // the service's name
	port    string // the port's name or number
}

// parseForward reads SERVICE:PORT [LOCAL_PORT] or LOCAL_PORT:SERVICE:PORT.
func parseForward(args []string) (forward, error) {
	parts := strings.Split(args[0], ":")
	local := ""
	switch {
	case len(parts) == 2 && len(args) == 2:
		local = args[1]
	case len(parts) == 2 && len(args) == 1:
	case len(parts) == 3 && len(args) == 1:
		local, parts = parts[0], parts[1:]
	case len(parts) == 3:
		return forward{}, fmt.Errorf("%q names the local port already: no LOCAL_PORT after it", args[0])
	default:
		return forward{}, fmt.Errorf("%q: want SERVICE:PORT or LOCAL_PORT:SERVICE:PORT", args[0])
	}
	f := forward{service: parts[0], port: parts[1]}
	if f.service == "" || f.port == "" {
		return forward{}, fmt.Errorf("%q: want SERVICE:PORT with both parts", args[0])
	}
	if n, err := strconv.Atoi(f.port); err == nil && (n < 1 || n > 65535) {
		return forward{}, fmt.Errorf("port %d is not between 1 and 65535", n)
	}
	if local != "" {
		n, err := strconv.Atoi(local)
		if err != nil || n < 0 || n > 65535 {
			return forward{}, fmt.Errorf("local port %q: want a number from 0 (any free port) to 65535", local)
		}
		f.local = n
	}
	return f, nil
}

// portForward listens until ctx ends, and forwards each connection
// through its own stream.
func portForward(ctx context.Context, c clientFlags, job string, f forward, stdout, stderr io.Writer) int {
	j, err := c.jobServices(ctx, job)
	if err == nil {
		_, err = chooseService(j.names(), f.service)
	}
	if err != nil {
		fmt.Fprintf(stderr, "levers9 port-forward: %v\n", err)
		return exitError
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(f.local)))
	if err != nil {
		fmt.Fprintf(stderr, "levers9 port-forward: %v\n", err)
		return exitError
	}
	defer context.AfterFunc(ctx, func() { _ = ln.Close() })()
	fmt.Fprintf(stdout, "Forwarding from %s -> %s:%s\n", ln.Addr(), f.service, f.port)
	path := streamPath("tcp", j.ID, f.service, f.port)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		local, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return exitOK // Ctrl-C: the way it ends
			}
			fmt.Fprintf(stderr, "levers9 port-forward: %v\n", err)
			return exitError
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer local.Close()
			stop := context.AfterFunc(ctx, func() { _ = local.Close() })
			defer stop()
			remote, err := c.dialStream(ctx, path, nil)
			if err != nil {
				fmt.Fprintf(stderr, "levers9 port-forward: connection from %s to %s:%s: %v\n", local.RemoteAddr(), f.service, f.port, err)
				return
			}
			defer remote.Close()
			relayBoth(local, remote)
		}()
	}
}

// halfCloser is a connection whose sending side closes alone (TCP).
type halfCloser interface {
	CloseWrite() error
}

// halfCloseGrace is how long the remote side may go on sending after the
// local end of input before the stream is closed: a server that does not
// pass half-closes on would otherwise keep the stream (and the service's
// connection) open for as long as the service waits for more input.
const halfCloseGrace = 10 * time.Second

// relayBoth copies both ways until both directions ended. The local end
// of input goes to the server as an empty message, which carries no bytes
// (a stream reader skips it) and tells a server that knows it to pass the
// half-close on; the end of the remote side half-closes the local
// connection. Either side failing ends both.
func relayBoth(local, remote net.Conn) {
	up := make(chan struct{})
	var grace *time.Timer
	go func() {
		defer close(up)
		_, err := io.Copy(remote, local)
		if err != nil {
			_ = remote.Close()
			_ = local.Close()
			return
		}
		_, _ = remote.Write(nil)
		grace = time.AfterFunc(halfCloseGrace, func() { _ = remote.Close() })
	}()
	_, err := io.Copy(local, remote)
	if hc, ok := local.(halfCloser); ok && err == nil {
		_ = hc.CloseWrite()
	} else {
		_ = local.Close()
	}
	<-up
	if grace != nil {
		grace.Stop()
	}
}
