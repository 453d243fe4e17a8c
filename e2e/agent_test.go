package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
)

// agentProc is a `levers9 agent` process.
type agentProc struct {
	cmd    *exec.Cmd
	out    *lockedBuffer
	exited chan struct{}
}

func startAgent(t *testing.T, args ...string) *agentProc {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = cleanEnv()
	a := &agentProc{cmd: cmd, out: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = a.out, a.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(a.exited) }()
	t.Cleanup(func() {
		a.kill()
		if t.Failed() {
			t.Logf("agent output (%v):\n%s", args, a.out)
		}
	})
	return a
}

func (a *agentProc) kill() {
	select {
	case <-a.exited:
	default:
		_ = a.cmd.Process.Signal(syscall.SIGKILL)
		<-a.exited
	}
}

// poll retries fn until it returns true; the bound only catches hangs.
func poll(t *testing.T, what string, fn func() bool) {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for !fn() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// grant gives the admin tokens, so the budget policy lets jobs run.
func grant(t *testing.T, base, token string) {
	t.Helper()
	var me struct {
		Viewer struct{ User struct{ ID string } }
	}
	gql(t, base, token, `{ viewer { user { id } } }`, nil, &me)
	var granted map[string]any
	gql(t, base, token, `mutation($u: ID!) { grantTokens(input: {userID: $u, tokens: 100000, reason: "e2e"}) { id } }`,
		map[string]any{"u": me.Viewer.User.ID}, &granted)
}

type nodeRow struct{ ID, Name, Status string }

func nodeByName(t *testing.T, base, token, name string) *nodeRow {
	var out struct {
		Nodes struct{ Edges []struct{ Node nodeRow } }
	}
	gql(t, base, token, `{ nodes(first: 100) { edges { node { id name status } } } }`, nil, &out)
	for _, e := range out.Nodes.Edges {
		if e.Node.Name == name {
			return &e.Node
		}
	}
	return nil
}

type jobRow struct{ Status, StatusReason string }

func jobByID(t *testing.T, base, token, id string) jobRow {
	var out struct{ Node jobRow }
	gql(t, base, token, `query($id: ID!) { node(id: $id) { ... on Job { status statusReason } } }`, map[string]any{"id": id}, &out)
	return out.Node
}

// A separate agent process joins through an invite and runs a job; killed
// with SIGKILL, its node goes offline within the TTL and the job fails
// with "node lost" after the grace; restarted, the node is back online.
func TestAgentJoinRunAndLoss(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		s := startServer(t, t.TempDir(), url,
			"LEVERS9_LOCAL_NODE=false", "LEVERS9_NODE_TTL=2s", "LEVERS9_NODE_GRACE=3s")
		c := s.credentials()
		grant(t, s.URL, c.Token)

		var inv struct {
			CreateNodeInvite struct{ Code, JoinCommand string }
		}
		gql(t, s.URL, c.Token, `mutation { createNodeInvite(nodeName: "e2e-node") { code joinCommand } }`, nil, &inv)
		if !strings.Contains(inv.CreateNodeInvite.JoinCommand, inv.CreateNodeInvite.Code) {
			t.Fatalf("join command %q lacks the code", inv.CreateNodeInvite.JoinCommand)
		}
		stateDir := filepath.Join(t.TempDir(), "agent")
		agent := startAgent(t, "agent", "join", "--server", s.URL, "--invite", inv.CreateNodeInvite.Code,
			"--state-dir", stateDir, "--cpus", "4", "--memory", "8GiB", "--runtime", "process")
		var n *nodeRow
		poll(t, "the node online", func() bool {
			n = nodeByName(t, s.URL, c.Token, "e2e-node")
			return n != nil && n.Status == "ONLINE"
		})
		if fi, err := os.Stat(filepath.Join(stateDir, "node.json")); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("node.json: %v (want mode 0600)", err)
		}
		// The invite is single use.
		if out, code := levers9(t, "agent", "join", "--server", s.URL, "--invite", inv.CreateNodeInvite.Code,
			"--state-dir", t.TempDir()); code != 1 || !strings.Contains(out, "used already") {
			t.Errorf("second join: exit %d\n%s", code, out)
		}

		// Two services: a one-request HTTP server and a client that finds
		// it through the sibling address variables.
		var pair struct{ SubmitJob struct{ ID string } }
		gql(t, s.URL, c.Token, `mutation($web: [String!]!, $client: [String!]!) { submitJob(spec: {name: "pair", queue: "default", services: [
			{name: "web", command: $web, ports: [{name: "http"}], cpu: 1, memoryMiB: 64},
			{name: "client", command: $client, cpu: 1, memoryMiB: 64}]}) { id } }`, map[string]any{
			"web":    []string{"python3", "-c", "import http.server, os; http.server.HTTPServer(('127.0.0.1', int(os.environ['LEVERS9_WEB_PORT_HTTP'])), http.server.SimpleHTTPRequestHandler).handle_request()"},
			"client": []string{"sh", "-c", `for i in $(seq 100); do curl -sf -o /dev/null "http://$LEVERS9_WEB_HOST:$LEVERS9_WEB_PORT_HTTP/" && echo fetched && exit 0; sleep 0.2; done; exit 1`},
		}, &pair)
		poll(t, "the pair to end", func() bool {
			st := jobByID(t, s.URL, c.Token, pair.SubmitJob.ID).Status
			return st != "PENDING" && st != "RUNNING"
		})
		if j := jobByID(t, s.URL, c.Token, pair.SubmitJob.ID); j.Status != "COMPLETE" {
			t.Fatalf("two-service job = %+v", j)
		}
		// The logs of both services arrive in order without gaps or
		// duplicates, through the subscription too, also resumed mid-way.
		var hist struct {
			JobLogs []struct {
				Seq           int
				Service, Text string
			}
		}
		gql(t, s.URL, c.Token, `query($id: ID!) { jobLogs(jobId: $id) { seq service text } }`, map[string]any{"id": pair.SubmitJob.ID}, &hist)
		services := map[string]bool{}
		for i, l := range hist.JobLogs {
			if l.Seq != i+1 {
				t.Fatalf("log seqs %v are not 1..n", hist.JobLogs)
			}
			services[l.Service] = true
		}
		if !services["web"] || !services["client"] {
			t.Fatalf("logs of both services expected, got %+v", hist.JobLogs)
		}
		for _, from := range []int{1, 2} {
			got := subscribeLogs(t, s.URL, c.Token, pair.SubmitJob.ID, from)
			if len(got) != len(hist.JobLogs)-from+1 || got[0] != from || got[len(got)-1] != len(hist.JobLogs) {
				t.Fatalf("subscription from %d delivered seqs %v; history has %d lines", from, got, len(hist.JobLogs))
			}
			for i := 1; i < len(got); i++ {
				if got[i] != got[i-1]+1 {
					t.Fatalf("subscription from %d delivered seqs %v", from, got)
				}
			}
		}

		var sub struct{ SubmitJob struct{ ID string } }
		gql(t, s.URL, c.Token, `mutation { submitJob(spec: {name: "long", queue: "default", services: [{name: "main", command: ["sleep", "600"], cpu: 1, memoryMiB: 64}]}) { id } }`, nil, &sub)
		id := sub.SubmitJob.ID
		poll(t, "the job running", func() bool { return jobByID(t, s.URL, c.Token, id).Status == "RUNNING" })

		agent.kill()
		poll(t, "the node offline", func() bool {
			n := nodeByName(t, s.URL, c.Token, "e2e-node")
			return n.Status == "OFFLINE"
		})
		poll(t, "the job lost", func() bool { return jobByID(t, s.URL, c.Token, id).Status != "RUNNING" })
		if j := jobByID(t, s.URL, c.Token, id); j.Status != "ERROR" || j.StatusReason != "node lost" {
			t.Fatalf("job after the grace = %+v; want ERROR node lost", j)
		}

		// Restarted with its stored identity, the agent reconnects.
		startAgent(t, "agent", "--state-dir", stateDir, "--runtime", "process")
		poll(t, "the node back online", func() bool {
			return nodeByName(t, s.URL, c.Token, "e2e-node").Status == "ONLINE"
		})
		s.stop()
	})
}

// The built-in local node joins on first start and runs jobs.
func TestLocalNodeRunsJobs(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir(), dbtest.SQLiteURL(t))
	c := s.credentials()
	grant(t, s.URL, c.Token)
	poll(t, "the local node online", func() bool {
		n := nodeByName(t, s.URL, c.Token, "local")
		return n != nil && n.Status == "ONLINE"
	})
	var sub struct{ SubmitJob struct{ ID string } }
	gql(t, s.URL, c.Token, `mutation { submitJob(spec: {name: "hi", queue: "default", services: [{name: "main", command: ["echo", "hello"], cpu: 1, memoryMiB: 64}]}) { id } }`, nil, &sub)
	poll(t, "the job to end", func() bool {
		st := jobByID(t, s.URL, c.Token, sub.SubmitJob.ID).Status
		return st != "PENDING" && st != "RUNNING"
	})
	if j := jobByID(t, s.URL, c.Token, sub.SubmitJob.ID); j.Status != "COMPLETE" {
		t.Fatalf("job = %+v", j)
	}
	s.stop()
}
