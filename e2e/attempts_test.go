package e2e

import (
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
)

// A job requeued after its node was lost runs again as attempt 2; the
// lines of both attempts are kept apart, each numbered from 1, readable per
// attempt through GraphQL and `levers9 logs --attempt`.
func TestAttemptsKeepTheirLogs(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir(), dbtest.SQLiteURL(t),
		"LEVERS9_LOCAL_NODE=false", "LEVERS9_NODE_TTL=2s", "LEVERS9_NODE_GRACE=2s")
	c := s.credentials()
	grant(t, s.URL, c.Token)
	flags := []string{"--runtime", "process"}
	agent, stateDir, _ := joinAgent(t, s, c.Token, "retry-node", flags...)

	var sub struct{ SubmitJob struct{ ID string } }
	gql(t, s.URL, c.Token, `mutation($c: [String!]!) { submitJob(spec: {name: "retried", queue: "default", retries: 1,
		services: [{name: "main", command: $c, cpu: 1, memoryMiB: 64}]}) { id } }`,
		map[string]any{"c": []string{"sh", "-c", "for i in 1 2 3; do echo line $i; done; sleep 3; echo done"}}, &sub)
	id := sub.SubmitJob.ID
	has := func(lines []storedLine, text string) bool {
		for _, l := range lines {
			if l.Text == text {
				return true
			}
		}
		return false
	}
	poll(t, "the first attempt's lines", func() bool { return has(jobLogs(t, s.URL, c.Token, id, 0), "line 3") })

	agent.kill()
	var job struct{ Node struct{ Attempt int } }
	poll(t, "the job requeued", func() bool {
		gql(t, s.URL, c.Token, `query($id: ID!) { node(id: $id) { ... on Job { attempt } } }`, map[string]any{"id": id}, &job)
		return job.Node.Attempt == 2
	})
	startAgent(t, append([]string{"agent", "--state-dir", stateDir}, flags...)...)
	poll(t, "the job to end", func() bool {
		st := jobByID(t, s.URL, c.Token, id).Status
		return st != "PENDING" && st != "RUNNING"
	})
	if j := jobByID(t, s.URL, c.Token, id); j.Status != "COMPLETE" {
		t.Fatalf("job = %+v; want COMPLETE on its second attempt", j)
	}

	check := func(attempt int, lines []storedLine, want ...string) {
		t.Helper()
		for i, l := range lines {
			if l.Attempt != attempt || l.Seq != i+1 {
				t.Errorf("attempt %d: line %d is %+v; want attempt %d seq %d", attempt, i, l, attempt, i+1)
			}
		}
		for _, w := range want {
			if !has(lines, w) {
				t.Errorf("attempt %d lacks %q: %+v", attempt, w, lines)
			}
		}
	}
	first, second := jobLogs(t, s.URL, c.Token, id, 1), jobLogs(t, s.URL, c.Token, id, 2)
	check(1, first, "line 1", "line 2", "line 3")
	if has(first, "done") {
		t.Errorf("attempt 1 ran to its end although its agent was killed: %+v", first)
	}
	check(2, second, "line 1", "line 2", "line 3", "done")
	check(2, jobLogs(t, s.URL, c.Token, id, 0), "done") // the current attempt by default

	out, errOut, code := cli(t, s, c.Token, "logs", "--attempt", "1", id)
	if code != 0 || !strings.Contains(out, "main | line 3") || strings.Contains(out, "done") {
		t.Errorf("levers9 logs --attempt 1: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = cli(t, s, c.Token, "logs", id)
	if code != 0 || !strings.Contains(out, "main | done") {
		t.Errorf("levers9 logs: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := cli(t, s, c.Token, "logs", "--attempt", "3", id); code == 0 || !strings.Contains(errOut, "attempt") {
		t.Errorf("levers9 logs --attempt 3 of a job at attempt 2: exit %d %s", code, errOut)
	}
}
