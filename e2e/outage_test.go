package e2e

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
)

// Liveness of the outage tests: short, so that an outage outlasting TTL and
// grace stays short too.
const (
	outageTTL   = 3 * time.Second
	outageGrace = 10 * time.Second
	// outageFor outlasts TTL and grace: before the fix, a node silent this
	// long was lost as soon as the control plane looked again.
	outageFor = outageTTL + outageGrace + 5*time.Second
	// outageHold is how long before the end of the outage the agent is
	// stopped.
	outageHold = 5 * time.Second
)

// Our own outage does not kill healthy jobs (issue 42): a job runs on an
// external agent while the server is killed (SIGKILL) and started again on
// the same database, or while PostgreSQL is stopped and started again,
// each for longer than the node TTL and grace. The job goes on as if
// nothing happened: it ends COMPLETE with exit 0 in its first attempt,
// never lost or requeued; every line it printed, those of the outage too,
// is stored once and in order; and it is billed for its run, start to end,
// to the token.
//
// The agent comes back late, past the TTL but within the grace: it is
// stopped (SIGSTOP) before the control plane comes back and let go once the
// server has marked its node offline. The server must give it its full
// TTL and grace from the moment it could hear again. Before the fix, the
// sweep that noticed the silence counted the outage too and lost the job
// there; an agent back within a second or two could beat that sweep, so
// holding it back makes the old failure certain rather than a race.
func TestOutageKeepsHealthyJobs(t *testing.T) {
	t.Parallel()
	t.Run("server killed", func(t *testing.T) {
		t.Parallel()
		url := dbtest.PostgresURL(t)
		var restart func() *server
		checkOutage(t, url, func(t *testing.T, s *server, r func() *server) {
			restart = r
			if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-s.exited
		}, func(t *testing.T, _ *server) *server { return restart() })
	})
	t.Run("database stopped", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		c, err := dbtest.StartCluster(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Stop) // after the server's cleanup, registered later
		checkOutage(t, c.URL, func(t *testing.T, _ *server, _ func() *server) {
			ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
			defer cancel()
			if err := c.Halt(ctx); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, s *server) *server {
			ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
			defer cancel()
			if err := c.Resume(ctx); err != nil {
				t.Fatal(err)
			}
			return s
		})
	})
}

// checkOutage runs a job on an external agent of a server on url; cut
// takes the control plane away (restart starts a server on the same data
// and address) and, outageFor later, restore brings it back, returning the
// server that then runs. It checks that the job lived through it, all its
// lines stored and its run billed exactly.
func checkOutage(t *testing.T, url string, cut func(t *testing.T, s *server, restart func() *server), restore func(t *testing.T, s *server) *server) {
	dir := t.TempDir()
	env := []string{"LEVERS9_LOCAL_NODE=false",
		"LEVERS9_NODE_TTL=" + outageTTL.String(), "LEVERS9_NODE_GRACE=" + outageGrace.String(),
		"LEVERS9_ADDR=127.0.0.1:" + strconv.Itoa(steadyPort(t))}
	s := startServer(t, dir, url, env...)
	c := s.credentials()
	grant(t, s.URL, c.Token)
	// A CPU-minute costs 6 tokens, so every second of the run counts.
	queueID := firstID(t, s.URL, c.Token, `{ queues(where: {name: "default"}) { edges { node { id } } } }`, "queues")
	gql(t, s.URL, c.Token, `mutation($q: ID!) { updateQueue(id: $q, input: {cpuPrice: 6, memoryPrice: 0, startFee: 0}) { id } }`,
		map[string]any{"q": queueID}, new(map[string]any))
	agent, _, _ := joinAgent(t, s, c.Token, "outage-node", "--runtime", "process")

	// The job prints a numbered, timed line every 200 ms until the test
	// lets it end. It runs as a job user of its own: the flag lives where
	// that user may look.
	flags, err := os.MkdirTemp("", "levers9-outage-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(flags) })
	if err := os.Chmod(flags, 0o755); err != nil {
		t.Fatal(err)
	}
	flag := filepath.Join(flags, "end")
	script := fmt.Sprintf(`i=0; while [ ! -e %s ]; do i=$((i+1)); echo "line $i $(date +%%s%%N)"; sleep 0.2; done; echo "end after $i lines"`, flag)
	var sub struct{ SubmitJob struct{ ID string } }
	gql(t, s.URL, c.Token, `mutation($c: [String!]!) { submitJob(spec: {name: "outage", queue: "default",
		services: [{name: "main", command: $c, cpu: 1, memoryMiB: 64}]}) { id } }`,
		map[string]any{"c": []string{"sh", "-c", script}}, &sub)
	id := sub.SubmitJob.ID
	poll(t, "the job's first lines stored", func() bool { return len(outageLines(t, s, c.Token, id)) >= 5 })

	down := time.Now()
	cut(t, s, func() *server { return startServer(t, dir, url, env...) })
	// The agent is held a few seconds before the control plane comes
	// back, so that nothing it sent before is still being handled then.
	time.Sleep(outageFor - outageHold)
	if err := agent.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(outageHold)
	held := true
	cont := func() {
		if held {
			held = false
			_ = agent.cmd.Process.Signal(syscall.SIGCONT)
		}
	}
	defer cont()
	s = restore(t, s)
	back := time.Now()

	// The control plane hears again, but not the node: once it has been
	// silent for the TTL since, it is offline, its job waiting for it.
	poll(t, "the node offline after the outage", func() bool {
		return nodeByName(t, s.URL, c.Token, "outage-node").Status == "OFFLINE"
	})
	offline := time.Now()
	cont()
	// The job must live on through the grace (before the fix it was lost
	// with the node): wait for a line printed after it, stored.
	until := offline.Add(outageGrace + 2*time.Second)
	poll(t, "a line printed a grace after the node went offline, stored", func() bool {
		if j := jobByID(t, s.URL, c.Token, id); j.Status != "RUNNING" {
			t.Fatalf("job after the outage = %+v; want it still RUNNING", j)
		}
		lines := outageLines(t, s, c.Token, id)
		if len(lines) == 0 {
			return false
		}
		_, at, ok := lineOf(lines[len(lines)-1].Text)
		return ok && at.After(until)
	})
	if n := nodeByName(t, s.URL, c.Token, "outage-node"); n.Status != "ONLINE" {
		t.Errorf("node after the outage = %+v; want ONLINE", n)
	}

	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	poll(t, "the job to end", func() bool {
		st := jobByID(t, s.URL, c.Token, id).Status
		return st != "PENDING" && st != "RUNNING"
	})
	var got struct {
		Node struct {
			Status, StatusReason  string
			Attempt               int
			StartedAt, FinishedAt time.Time
			PricePerMinute        tokens
			Services              []struct{ ExitCode *int }
		}
	}
	gql(t, s.URL, c.Token, `query($id: ID!) { node(id: $id) { ... on Job {
		status statusReason attempt startedAt finishedAt pricePerMinute services { exitCode } } } }`,
		map[string]any{"id": id}, &got)
	j := got.Node
	if j.Status != "COMPLETE" || j.Attempt != 1 || len(j.Services) != 1 || j.Services[0].ExitCode == nil || *j.Services[0].ExitCode != 0 {
		t.Errorf("job = %+v; want COMPLETE with exit 0 in attempt 1", j)
	}
	var events struct {
		JobEvents []struct {
			Service        *string
			Status, Reason string
		}
	}
	gql(t, s.URL, c.Token, `query($id: ID!) { jobEvents(jobId: $id) { service status reason } }`, map[string]any{"id": id}, &events)
	running := 0
	for _, e := range events.JobEvents {
		if strings.Contains(e.Reason, "lost") || e.Status == "ERROR" {
			t.Errorf("event %+v: the job was lost", e)
		}
		if (e.Service == nil || *e.Service == "") && e.Status == "RUNNING" {
			running++
		}
	}
	if running != 1 {
		t.Errorf("the job started %d times; events %+v", running, events.JobEvents)
	}

	// Every line, once, in order: none lost or doubled across the outage.
	lines := outageLines(t, s, c.Token, id)
	var bad []string
	during := 0 // lines printed while the control plane was away
	for i, l := range lines {
		n, at, ok := lineOf(l.Text)
		if ok && at.After(down) && at.Before(back) {
			during++
		}
		last := i == len(lines)-1
		switch {
		case l.Seq != i+1 || l.Attempt != 1:
			bad = append(bad, fmt.Sprintf("#%d: %+v (want seq %d of attempt 1)", i, l, i+1))
		case !last && (!ok || n != i+1):
			bad = append(bad, fmt.Sprintf("#%d: %q (want line %d)", i, l.Text, i+1))
		case last && l.Text != fmt.Sprintf("end after %d lines", i):
			bad = append(bad, fmt.Sprintf("#%d: %q (want end after %d lines)", i, l.Text, i))
		}
	}
	if len(bad) > 0 || len(lines) < 2 {
		t.Errorf("stored log of %d lines; wrong: %s", len(lines), strings.Join(bad, "; "))
	}
	if during == 0 {
		t.Errorf("none of the %d lines stored was printed during the outage", len(lines))
	}

	// Billed for its run, start to end: the meter charges the last partial
	// minute once the job has ended.
	if j.PricePerMinute <= 0 {
		t.Fatalf("job priced %v a minute; want a price", j.PricePerMinute)
	}
	want := runCost(j.PricePerMinute, j.FinishedAt.Sub(j.StartedAt))
	var total tokens
	var charges []string
	poll(t, "the job's run charged to its end", func() bool {
		var out struct {
			Charges struct {
				Edges []struct {
					Node struct {
						Kind      string
						Tokens    tokens
						PeriodEnd *time.Time
						Reason    string
					}
				}
			}
		}
		gql(t, s.URL, c.Token, `query($j: ID!) { charges(first: 1000, where: {jobID: $j}) { edges { node { kind tokens periodEnd reason } } } }`,
			map[string]any{"j": id}, &out)
		total, charges = 0, nil
		closed := false
		for _, e := range out.Charges.Edges {
			ch := e.Node
			charges = append(charges, fmt.Sprintf("%s %v to %v %q", ch.Kind, ch.Tokens, ch.PeriodEnd, ch.Reason))
			if ch.Kind != "COMPUTE" && ch.Kind != "ADJUSTMENT" {
				continue
			}
			total += ch.Tokens
			closed = closed || ch.Kind == "COMPUTE" && ch.PeriodEnd != nil && ch.PeriodEnd.Equal(j.FinishedAt)
		}
		return closed
	})
	t.Logf("%d lines stored, %d printed during the outage; run of %v at %v a minute charged %v", len(lines), during, j.FinishedAt.Sub(j.StartedAt), j.PricePerMinute, total)
	if total != want {
		t.Errorf("run of %v at %v a minute charged %v; want %v; charges: %s",
			j.FinishedAt.Sub(j.StartedAt), j.PricePerMinute, total, want, strings.Join(charges, "; "))
	}
}

func outageLines(t *testing.T, s *server, token, id string) []storedLine {
	t.Helper()
	var all []storedLine
	for {
		var out struct{ JobLogs []storedLine }
		gql(t, s.URL, token, `query($id: ID!, $from: Int!) { jobLogs(jobId: $id, fromSeq: $from) { attempt seq service text } }`,
			map[string]any{"id": id, "from": len(all) + 1}, &out)
		if len(out.JobLogs) == 0 {
			return all
		}
		all = append(all, out.JobLogs...)
	}
}

// lineOf parses "line N UNIXNANO" as the outage job prints it.
func lineOf(text string) (int, time.Time, bool) {
	var n int
	var ns int64
	if _, err := fmt.Sscanf(text, "line %d %d", &n, &ns); err != nil {
		return 0, time.Time{}, false
	}
	return n, time.Unix(0, ns), true
}

// steadyPort is a free port below the kernel's ephemeral range, so that
// no outgoing connection takes it while a killed server is down.
func steadyPort(t *testing.T) int {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 12000 {
				low = v
			}
		}
	}
	for range 100 {
		p := 10000 + rand.IntN(low-10000)
		if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
			l.Close()
			return p
		}
	}
	t.Fatal("no free port below the ephemeral range")
	return 0
}

// tokens are a token amount as the API writes it ("3.5"), in millionths
// of a token, the ledger's unit.
type tokens int64

func (t *tokens) UnmarshalJSON(b []byte) error {
	r, ok := new(big.Rat).SetString(strings.Trim(string(b), `"`))
	if !ok {
		return fmt.Errorf("%s is not a token amount", b)
	}
	r.Mul(r, big.NewRat(1_000_000, 1))
	if !r.IsInt() {
		return fmt.Errorf("%s is finer than a millionth of a token", b)
	}
	*t = tokens(r.Num().Int64())
	return nil
}

func (t tokens) String() string { return big.NewRat(int64(t), 1_000_000).FloatString(6) }

// runCost is the README's rounding rule: every whole minute at the full
// price, the last partial minute pro rata per started second, in
// millionths rounded half away from zero.
func runCost(perMinute tokens, d time.Duration) tokens {
	if d <= 0 {
		return 0
	}
	full := int64(d / time.Minute)
	secs := int64(math.Ceil((d - time.Duration(full)*time.Minute).Seconds()))
	return perMinute*tokens(full) + tokens(math.Round(float64(perMinute)*float64(secs)/60))
}
