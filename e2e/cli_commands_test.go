package e2e

import (
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
)

// The CLI's listing and admin commands against a real server: tables by
// default, JSON with --json, exit codes 1 for errors (a wrong token, an
// unknown job, a server that is down) and 2 for bad usage.
func TestCLICommands(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir(), dbtest.SQLiteURL(t))
	token := s.credentials().Token
	env := []string{"LEVERS9_SERVER=" + s.URL, "LEVERS9_TOKEN=" + token, "LEVERS9_CONFIG=" + t.TempDir() + "/none"}
	expect := func(wantCode int, args ...string) (string, string) {
		t.Helper()
		out, errOut, code := clientRun(t, env, "", args...)
		if code != wantCode {
			t.Fatalf("levers9 %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, wantCode, out, errOut)
		}
		return out, errOut
	}
	decode := func(raw string, v any) {
		t.Helper()
		if err := json.Unmarshal([]byte(raw), v); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, raw)
		}
	}

	// jobs and job show.
	_, errOut := expect(3, "run", "--name", "cli-e2e", "--", "sh", "-c", "echo hi; exit 3")
	job := submitted.FindStringSubmatch(errOut)[1]
	out, _ := expect(0, "jobs")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[1], job) || !strings.Contains(lines[1], "ERROR") {
		t.Fatalf("jobs:\n%s", out)
	}
	var jobs []struct {
		ID, Name, Status string
		Services         []struct{ ExitCode *int }
	}
	out, _ = expect(0, "jobs", "--json", "--status", "error")
	decode(out, &jobs)
	if len(jobs) != 1 || jobs[0].ID != job || jobs[0].Name != "cli-e2e" || *jobs[0].Services[0].ExitCode != 3 {
		t.Fatalf("jobs --json: %s", out)
	}
	out, _ = expect(0, "jobs", "--json", "--status", "RUNNING")
	if strings.TrimSpace(out) != "[]" {
		t.Fatalf("jobs --status RUNNING --json = %s, want []", out)
	}
	out, _ = expect(0, "job", "show", job)
	for _, want := range []string{"ID:", job, "Status:", "ERROR", "Queue:", "default", "main", "sh -c echo hi; exit 3", "local"} {
		if !strings.Contains(out, want) {
			t.Fatalf("job show lacks %q:\n%s", want, out)
		}
	}
	out, _ = expect(0, "job", "show", job, "--json")
	var shown struct{ ID, Status string }
	decode(out, &shown)
	if shown.ID != job || shown.Status != "ERROR" {
		t.Fatalf("job show --json: %s", out)
	}

	out, _ = expect(0, "logs", job, "--json")
	var line struct {
		Seq          int
		Stream, Text string
	}
	decode(out, &line)
	if line.Seq != 1 || line.Stream != "stdout" || line.Text != "hi" {
		t.Fatalf("logs --json: %s", out)
	}
	out, _ = expect(0, "tokens", "--json")
	var balance struct {
		Viewer struct {
			User    struct{ Email string }
			Balance json.Number
		}
	}
	decode(out, &balance)
	if balance.Viewer.User.Email != "admin@levers9.local" || balance.Viewer.Balance != "0" {
		t.Fatalf("tokens --json: %s", out)
	}

	// Errors: an unknown job, a wrong token, a server that is down.
	_, errOut = expect(1, "job", "show", "job_01m8nonexistent0000000000000")
	if !strings.Contains(errOut, "NOT_FOUND") {
		t.Fatalf("job show of an unknown job: %q", errOut)
	}
	_, errOut = expect(1, "cancel", "job_01m8nonexistent0000000000000")
	if !strings.Contains(errOut, "NOT_FOUND") {
		t.Fatalf("cancel of an unknown job: %q", errOut)
	}
	for _, args := range [][]string{{"jobs"}, {"queues"}, {"nodes"}, {"token", "list"}, {"invite", "list"}, {"job", "show", job}} {
		_, errOut = expect(1, append(args, "--token", "lv9_wrong")...)
		if !strings.Contains(errOut, "UNAUTHENTICATED") {
			t.Fatalf("%v with a wrong token: %q", args, errOut)
		}
	}
	down := closedPort(t)
	for _, args := range [][]string{{"jobs"}, {"run", "--", "true"}, {"ls", "bucket"}, {"logs", job}} {
		_, errOut = expect(1, append([]string{args[0], "--server", down}, args[1:]...)...)
		if !strings.Contains(errOut, "reaching "+down) {
			t.Fatalf("%v against a server that is down: %q", args, errOut)
		}
	}

	// Bad usage.
	for _, args := range [][]string{{"jobs", "extra"}, {"jobs", "-n", "-1"}, {"job"}, {"job", "show"}, {"token"}, {"token", "frob"},
		{"invite", "frob"}, {"queues", "x"}, {"nodes", "--bogus"}, {"token", "create"}, {"context"}, {"nosuchcommand"}} {
		expect(2, args...)
	}

	// queues and nodes: the default queue with the built-in local node.
	out, _ = expect(0, "queues")
	if !strings.Contains(out, "NAME") || !strings.Contains(out, "default") || !strings.Contains(out, "1 of 1 online") {
		t.Fatalf("queues:\n%s", out)
	}
	var queues []struct {
		Name  string
		Nodes []struct{ Name string }
	}
	out, _ = expect(0, "queues", "--json")
	decode(out, &queues)
	if len(queues) != 1 || queues[0].Name != "default" || len(queues[0].Nodes) != 1 || queues[0].Nodes[0].Name != "local" {
		t.Fatalf("queues --json: %s", out)
	}
	out, _ = expect(0, "nodes")
	if !strings.Contains(out, "local") || !strings.Contains(out, "ONLINE") {
		t.Fatalf("nodes:\n%s", out)
	}
	var nodes []struct {
		Name, Status string
		Inventory    struct{ CPUs float64 }
	}
	out, _ = expect(0, "nodes", "--json")
	decode(out, &nodes)
	if len(nodes) != 1 || nodes[0].Name != "local" || nodes[0].Status != "ONLINE" || nodes[0].Inventory.CPUs <= 0 {
		t.Fatalf("nodes --json: %s", out)
	}

	// token create, list, revoke: the new token works until revoked.
	var created struct {
		Token    string
		APIToken struct{ ID, Name string }
	}
	out, _ = expect(0, "token", "create", "--json", "ci")
	decode(out, &created)
	if !strings.HasPrefix(created.Token, "lv9_") || created.APIToken.Name != "ci" {
		t.Fatalf("token create --json: %s", out)
	}
	out, _ = expect(0, "token", "list")
	if !strings.Contains(out, created.APIToken.ID) || strings.Contains(out, created.Token) {
		t.Fatalf("token list (no secrets):\n%s", out)
	}
	expect(0, "jobs", "--token", created.Token)
	out, _ = expect(0, "token", "revoke", created.APIToken.ID)
	if !strings.Contains(out, "revoked "+created.APIToken.ID) {
		t.Fatalf("token revoke: %q", out)
	}
	_, errOut = expect(1, "jobs", "--token", created.Token)
	if !strings.Contains(errOut, "UNAUTHENTICATED") {
		t.Fatalf("a revoked token: %q", errOut)
	}

	// invite create, list, revoke.
	var invite struct {
		Code, JoinCommand string
		Invite            struct{ ID, NodeName string }
	}
	out, _ = expect(0, "invite", "create", "--name", "gpu-01", "--json")
	decode(out, &invite)
	if invite.Invite.NodeName != "gpu-01" || !strings.Contains(invite.JoinCommand, invite.Code) {
		t.Fatalf("invite create --json: %s", out)
	}
	out, _ = expect(0, "invite", "list")
	if !strings.Contains(out, invite.Invite.ID) || !strings.Contains(out, "open") || !strings.Contains(out, "used") {
		t.Fatalf("invite list (the new one open, the local node's used):\n%s", out)
	}
	expect(0, "invite", "revoke", invite.Invite.ID)
	var invites []struct{ ID, RevokedAt *string }
	out, _ = expect(0, "invite", "list", "--json")
	decode(out, &invites)
	revoked := false
	for _, i := range invites {
		revoked = revoked || (*i.ID == invite.Invite.ID && i.RevokedAt != nil)
	}
	if !revoked {
		t.Fatalf("invite %s not revoked: %s", invite.Invite.ID, out)
	}
	s.stop()
}

// closedPort is the URL of a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}
