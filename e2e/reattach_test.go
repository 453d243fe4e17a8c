package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/dockertest"
)

// storedLine is a line as the jobLogs query returns it.
type storedLine struct {
	Attempt, Seq int
	Service      string
	Text         string
}

func jobLogs(t *testing.T, base, token, id string, attempt int) []storedLine {
	t.Helper()
	var out struct{ JobLogs []storedLine }
	vars := map[string]any{"id": id}
	if attempt > 0 {
		vars["a"] = attempt
	}
	gql(t, base, token, `query($id: ID!, $a: Int) { jobLogs(jobId: $id, attempt: $a) { attempt seq service text } }`, vars, &out)
	return out.JobLogs
}

// joinAgent creates an invite for a node called name and starts `levers9
// agent join` with extra flags; it returns the agent, its state directory
// and the node's ID once online.
func joinAgent(t *testing.T, s *server, token, name string, flags ...string) (*agentProc, string, string) {
	t.Helper()
	var inv struct{ CreateNodeInvite struct{ Code string } }
	gql(t, s.URL, token, `mutation($n: String!) { createNodeInvite(nodeName: $n) { code } }`, map[string]any{"n": name}, &inv)
	stateDir := filepath.Join(t.TempDir(), "agent")
	args := append([]string{"agent", "join", "--server", s.URL, "--invite", inv.CreateNodeInvite.Code,
		"--state-dir", stateDir, "--cpus", "4", "--memory", "8GiB"}, flags...)
	a := startAgent(t, args...)
	var n *nodeRow
	poll(t, "the node online", func() bool {
		n = nodeByName(t, s.URL, token, name)
		return n != nil && n.Status == "ONLINE"
	})
	return a, stateDir, n.ID
}

func submitShell(t *testing.T, s *server, token, script string) string {
	t.Helper()
	var sub struct{ SubmitJob struct{ ID string } }
	gql(t, s.URL, token, `mutation($c: [String!]!) { submitJob(spec: {name: "reattach", queue: "default",
		services: [{name: "main", command: $c, cpu: 1, memoryMiB: 64}]}) { id } }`,
		map[string]any{"c": []string{"sh", "-c", script}}, &sub)
	return sub.SubmitJob.ID
}

// An agent on Docker killed with SIGKILL mid-job leaves the container
// running; restarted, it finds the container again and its log goes on
// where the server's copy ends: the job completes with exactly its lines,
// each once, in order, in one attempt.
func TestReattachDocker(t *testing.T) {
	t.Parallel()
	image := dockertest.Busybox(t)
	dc := dockertest.Client(t)
	dbtest.Each(t, func(t *testing.T, url string) {
		s := startServer(t, t.TempDir(), url, "LEVERS9_LOCAL_NODE=false")
		c := s.credentials()
		grant(t, s.URL, c.Token)
		flags := []string{"--runtime", "docker", "--default-image", image}
		agent, stateDir, nodeID := joinAgent(t, s, c.Token, "docker-node", flags...)
		t.Cleanup(func() { removeNodeContainers(t, dc, nodeID) })

		const n = 60
		id := submitShell(t, s, c.Token, fmt.Sprintf("for i in $(seq 1 %d); do echo line $i; sleep 0.1; done", n))
		poll(t, "the first lines stored", func() bool { return len(jobLogs(t, s.URL, c.Token, id, 0)) >= 10 })
		agent.kill()
		// The container goes on printing while no agent listens.
		f := client.Filters{}.Add("label", "levers9.job="+id)
		cs, err := dc.ContainerList(context.Background(), client.ContainerListOptions{Filters: f})
		if err != nil {
			t.Fatal(err)
		}
		if len(cs.Items) != 1 {
			t.Fatalf("%d running containers of the job after the agent was killed; want 1", len(cs.Items))
		}
		time.Sleep(time.Second)

		startAgent(t, append([]string{"agent", "--state-dir", stateDir}, flags...)...)
		poll(t, "the job to end", func() bool {
			st := jobByID(t, s.URL, c.Token, id).Status
			return st != "PENDING" && st != "RUNNING"
		})
		if j := jobByID(t, s.URL, c.Token, id); j.Status != "COMPLETE" {
			t.Fatalf("job = %+v; want COMPLETE", j)
		}
		var attempt struct{ Node struct{ Attempt int } }
		gql(t, s.URL, c.Token, `query($id: ID!) { node(id: $id) { ... on Job { attempt } } }`, map[string]any{"id": id}, &attempt)
		if attempt.Node.Attempt != 1 {
			t.Errorf("attempt %d; the container should have been reattached, not run again", attempt.Node.Attempt)
		}
		lines := jobLogs(t, s.URL, c.Token, id, 0)
		var bad []string
		for i, l := range lines {
			if want := fmt.Sprintf("line %d", i+1); l.Seq != i+1 || l.Text != want || l.Attempt != 1 {
				bad = append(bad, fmt.Sprintf("#%d: %+v (want seq %d %q)", i, l, i+1, want))
			}
		}
		if len(lines) != n || len(bad) > 0 {
			t.Fatalf("stored log has %d lines, want %d; wrong: %s", len(lines), n, strings.Join(bad, "; "))
		}
		if out, errOut, code := cli(t, s, c.Token, "logs", "--attempt", "1", id); code != 0 ||
			strings.Count(out, "main | line ") != n {
			t.Errorf("levers9 logs --attempt 1: exit %d\n%s%s", code, out, errOut)
		}
	})
}

// removeNodeContainers removes what a failed test left on the daemon.
func removeNodeContainers(t *testing.T, cli *client.Client, nodeID string) {
	ctx := context.Background()
	f := client.Filters{}.Add("label", "levers9.node="+nodeID)
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Logf("listing leftover containers: %v", err)
		return
	}
	for _, c := range cs.Items {
		_, _ = cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true})
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err == nil {
		for _, n := range ns.Items {
			_, _ = cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{})
		}
	}
}

// With the process runtime, a service's processes die with the agent:
// after SIGKILL of the agent, neither the service nor a process it started
// in the background is left.
func TestReattachProcessDiesWithAgent(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir(), dbtest.SQLiteURL(t), "LEVERS9_LOCAL_NODE=false")
	c := s.credentials()
	grant(t, s.URL, c.Token)
	agent, _, _ := joinAgent(t, s, c.Token, "process-node", "--runtime", "process")
	id := submitShell(t, s, c.Token, `sleep 600 & echo "pid $!"; echo "pid $$"; wait`)
	pidRe := regexp.MustCompile(`^pid (\d+)$`)
	var pids []int
	poll(t, "both pids logged", func() bool {
		pids = pids[:0]
		for _, l := range jobLogs(t, s.URL, c.Token, id, 0) {
			if m := pidRe.FindStringSubmatch(l.Text); m != nil {
				p, _ := strconv.Atoi(m[1])
				pids = append(pids, p)
			}
		}
		return len(pids) == 2
	})
	for _, p := range pids {
		if !alive(p) {
			t.Fatalf("process %d is not running before the agent is killed", p)
		}
	}
	agent.kill()
	poll(t, "the service's processes gone", func() bool {
		for _, p := range pids {
			if alive(p) {
				return false
			}
		}
		return true
	})
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) STATE …: the state follows the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}
