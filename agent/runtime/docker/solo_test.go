package docker

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/dockertest"
)

// Jobs of one service share the node's network, made once, with traffic
// between its containers off: a job cannot reach another job's service
// there (the host can: the service listens), and the network outlives
// the jobs; a job of two services still gets a network of its own.
func TestDockerOneServiceJobsShareAnIsolatedNetwork(t *testing.T) {
	t.Parallel()
	r := newRuntime(t)
	cli := dockertest.Client(t)
	ctx := context.Background()
	solo := soloNetwork(r.cfg.NodeID)

	server := start(t, r, runtime.ServiceSpec{Name: "web", Command: sh("echo up; exec httpd -f -p 8080 -h /www")})
	se := watch(t, server)
	se.line("web", "up")
	res, err := cli.ContainerInspect(ctx, containerName(server.ID(), 1, "web"), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Container.HostConfig.NetworkMode != container.NetworkMode(solo) {
		t.Fatalf("a one-service job's container is on %s, want %s", res.Container.HostConfig.NetworkMode, solo)
	}
	ip := res.Container.NetworkSettings.Networks[solo].IPAddress.String()
	// The control: the service answers (from the host), once it listens.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got := httpHead(t, ip+":8080")
		if strings.HasPrefix(got, "HTTP/1.") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the host got %q from the service at %s, want an HTTP answer", got, ip)
		}
	}

	probe := start(t, r, runtime.ServiceSpec{Name: "probe", Command: sh(
		`if printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 3 ` + ip + ` 8080 2>/dev/null | grep -q HTTP/1; then echo reached; else echo unreachable; fi`)})
	ce := watch(t, probe)
	ce.end()
	if lines := ce.lines("probe"); len(lines) != 1 || lines[0] != "unreachable" {
		t.Errorf("another job's service on the node's network: %q, want unreachable", lines)
	}

	nres, err := cli.NetworkInspect(ctx, solo, client.NetworkInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if nres.Network.Options[iccOption] != "false" || nres.Network.Labels[labelShared] != "1" || nres.Network.Labels[labelNode] != r.cfg.NodeID {
		t.Errorf("the node's network: options %v, labels %v", nres.Network.Options, nres.Network.Labels)
	}

	pair := startSpec(t, r, runtime.JobSpec{ID: randomID("job-"), Attempt: 1, Services: []runtime.ServiceSpec{
		{Name: "a", Command: sh("echo a; exec sleep 60")},
		{Name: "b", Command: sh("echo b; exec sleep 60")},
	}})
	pe := watch(t, pair)
	pe.line("a", "a")
	res, err = cli.ContainerInspect(ctx, containerName(pair.ID(), 1, "a"), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := networkName(pair.ID(), 1); res.Container.HostConfig.NetworkMode != container.NetworkMode(want) {
		t.Errorf("a two-service job's container is on %s, want its own %s", res.Container.HostConfig.NetworkMode, want)
	}
	pair.Stop("done", 0)
	pe.end()
	server.Stop("done", 0)
	se.end()
	assertRemoved(t, server.ID())
	assertRemoved(t, pair.ID())
	if _, err := cli.NetworkInspect(ctx, solo, client.NetworkInspectOptions{}); err != nil {
		t.Errorf("the node's network went with its jobs: %v", err)
	}
}

// httpHead sends a GET to addr and returns the first line of the answer
// ("" when nothing answered).
func httpHead(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return ""
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprint(c, "GET / HTTP/1.0\r\n\r\n"); err != nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(c, 64))
	line, _, _ := strings.Cut(string(b), "\r\n")
	return line
}
