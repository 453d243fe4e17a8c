package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
)

// The STOP budget policy from the meter's periodic worker down to the
// process: the first tenant's admin (the tenant stops jobs whose payer runs
// out) has tokens for one minute of a job, runs it on the built-in node, and
// before that minute is spent the job ends CANCELLED "out of tokens" and its
// process is gone from the machine. The meter ticks every minute, so this
// takes up to a minute.
func TestStopPolicyStopsTheProcess(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("the job's process is found on the process runtime of the built-in node, which needs root")
	}
	s := startServer(t, t.TempDir(), dbtest.SQLiteURL(t), "LEVERS9_LOCAL_NODE_RUNTIME=process")
	c := s.credentials()
	waitLocalNode(t, s.URL, c.Token)

	// One CPU at one token a minute; the admin has exactly one minute.
	var q struct {
		Queues struct {
			Edges []struct{ Node struct{ ID string } }
		}
	}
	gql(t, s.URL, c.Token, `{ queues(where: {name: "default"}) { edges { node { id } } } }`, nil, &q)
	gql(t, s.URL, c.Token, `mutation($id: ID!) { updateQueue(id: $id, input: {cpuPrice: 1}) { id } }`,
		map[string]any{"id": q.Queues.Edges[0].Node.ID}, new(map[string]any))
	var me struct {
		Viewer struct{ User struct{ ID string } }
	}
	gql(t, s.URL, c.Token, `{ viewer { user { id } } }`, nil, &me)
	gql(t, s.URL, c.Token, `mutation($u: ID!) { grantTokens(input: {userID: $u, tokens: 1, reason: "one minute"}) { id } }`,
		map[string]any{"u": me.Viewer.User.ID}, new(map[string]any))

	// The job says who it is, then becomes a process that would run for
	// ten minutes.
	var sub struct{ SubmitJob struct{ ID string } }
	gql(t, s.URL, c.Token, `mutation { submitJob(spec: {name: "spender", queue: "default", services: [{name: "main", command: ["sh", "-c", "echo $$; exec sleep 600"], cpu: 1, memoryMiB: 64}]}) { id } }`,
		nil, &sub)
	id := sub.SubmitJob.ID
	var pid int
	poll(t, "the job to print its process ID", func() bool {
		var logs struct{ JobLogs []struct{ Text string } }
		gql(t, s.URL, c.Token, `query($j: ID!) { jobLogs(jobId: $j) { text } }`, map[string]any{"j": id}, &logs)
		if len(logs.JobLogs) == 0 {
			return false
		}
		var err error
		if pid, err = strconv.Atoi(strings.TrimSpace(logs.JobLogs[0].Text)); err != nil {
			t.Fatalf("first line %q is not a process ID", logs.JobLogs[0].Text)
		}
		return true
	})
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	// The shell printed its ID, then execs sleep: on a busy machine the
	// line can be read before the exec.
	var cmd []byte
	poll(t, "the job's shell to become sleep", func() bool {
		var err error
		if cmd, err = os.ReadFile(filepath.Join(proc, "cmdline")); err != nil {
			t.Fatalf("process %d of the running job: %v", pid, err)
		}
		return strings.HasPrefix(string(cmd), "sleep")
	})
	if j := jobByID(t, s.URL, c.Token, id); j.Status != "RUNNING" {
		t.Fatalf("job = %+v, want RUNNING", j)
	}

	// The meter's tick within the paid minute plans the stop ahead of its
	// end.
	var row jobRow
	deadline := time.Now().Add(startTimeout + 3*time.Minute)
	for {
		row = jobByID(t, s.URL, c.Token, id)
		if row.Status != "PENDING" && row.Status != "RUNNING" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job still %s: the STOP policy did not end it", row.Status)
		}
		time.Sleep(time.Second)
	}
	if row.Status != "CANCELLED" || row.StatusReason != "out of tokens" {
		t.Fatalf("job = %+v, want CANCELLED: out of tokens", row)
	}
	poll(t, "the job's process to be gone", func() bool {
		_, err := os.Stat(proc)
		if err == nil {
			// A zombie is gone too: nothing runs any more.
			st, _ := os.ReadFile(filepath.Join(proc, "stat"))
			return strings.Contains(string(st), ") Z ")
		}
		return os.IsNotExist(err)
	})
	// Compute never takes a STOP balance below zero: the job is stopped
	// ahead of the minute it could not pay and billed to its stop, so
	// what is left is under a minute's price.
	out := expectCLI(t, s, c.Token, 0, "tokens")
	m := regexp.MustCompile(`Balance of \S+: (-?[0-9.]+) tokens`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("levers9 tokens after the stop:\n%s\nwant a balance", out)
	}
	if bal, err := strconv.ParseFloat(m[1], 64); err != nil || bal < 0 || bal >= 1 {
		t.Errorf("levers9 tokens after the stop:\n%s\nwant a balance of at least 0 and under 1", out)
	}
	s.stop()
}
