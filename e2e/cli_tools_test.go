package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
)

// The everyday CLI against the real binary and server: buckets made from
// the command line on a fresh server, cp through standard input and
// output, ls --json, jobs -o wide, queue with its reasons, top, the
// connection flags after the command with a scheme-less URL, a password
// login that leaves no session behind, and run's 130 on Ctrl-C.
func TestCLITools(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir(), dbtest.SQLiteURL(t))
	c := s.credentials()
	waitLocalNode(t, s.URL, c.Token)
	config := t.TempDir() + "/config"
	env := []string{"LEVERS9_SERVER=" + s.URL, "LEVERS9_TOKEN=" + c.Token, "LEVERS9_CONFIG=" + config}
	expectIn := func(wantCode int, stdin string, args ...string) (string, string) {
		t.Helper()
		out, errOut, code := clientRun(t, env, stdin, args...)
		if code != wantCode {
			t.Fatalf("levers9 %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, wantCode, out, errOut)
		}
		return out, errOut
	}
	expect := func(wantCode int, args ...string) (string, string) {
		t.Helper()
		return expectIn(wantCode, "", args...)
	}
	contains := func(what, got string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Fatalf("%s lacks %q:\n%s", what, w, got)
			}
		}
	}

	// Buckets: the fresh server's one storage is taken when none is named.
	out, _ := expect(0, "buckets", "create", "data")
	contains("buckets create", out, "Created bucket data on storage local")
	expect(0, "buckets", "create", "scratch", "--storage", "local")
	_, errOut := expect(1, "buckets", "create", "other", "--storage", "nosuch")
	contains("buckets create --storage nosuch", errOut, `no storage "nosuch"`, "local")
	_, errOut = expect(1, "buckets", "create", "Bad Name!")
	contains("buckets create with a bad name", errOut, "name")
	out, _ = expect(0, "buckets")
	contains("buckets", out, "NAME", "data", "scratch", "local (local)")
	var buckets []struct{ Name string }
	out, _ = expect(0, "buckets", "list", "--json")
	if err := json.Unmarshal([]byte(out), &buckets); err != nil || len(buckets) != 2 || buckets[0].Name != "data" {
		t.Fatalf("buckets list --json: %v\n%s", err, out)
	}

	// cp through the standard streams, ls --json, progress when asked.
	out, _ = expectIn(0, "hello from stdin\n", "cp", "-", "data:in/hello.txt")
	contains("cp - data:in/hello.txt", out, "standard input → data:in/hello.txt (17 bytes)")
	out, errOut = expect(0, "cp", "data:in/hello.txt", "-")
	if out != "hello from stdin\n" || errOut != "" {
		t.Fatalf("cp data:in/hello.txt - wrote %q, stderr %q: want the file alone", out, errOut)
	}
	_, errOut = expectIn(0, strings.Repeat("x", 1000), "cp", "--progress", "-", "data:big.txt")
	contains("cp --progress stderr", errOut, "big.txt", "1000 bytes")
	_, errOut = expect(0, "cp", "data:big.txt", "-", "--progress")
	contains("cp --progress to stdout, stderr", errOut, "big.txt 100% (1000/1000 bytes)")
	var objs []struct {
		Key  string
		Size int64
	}
	out, _ = expect(0, "ls", "--json", "data")
	if err := json.Unmarshal([]byte(out), &objs); err != nil || len(objs) != 2 || objs[0].Key != "big.txt" || objs[1].Key != "in/hello.txt" || objs[1].Size != 17 {
		t.Fatalf("ls --json data: %v\n%s", err, out)
	}
	if out, _ = expect(0, "ls", "scratch", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("ls --json of an empty bucket = %q, want []", out)
	}
	_, errOut = expect(1, "cp", "data:nosuch", "-")
	contains("cp of a missing key", errOut, "NOT_FOUND")
	out, _ = expect(0, "buckets", "delete", "scratch")
	contains("buckets delete", out, "deleted bucket scratch")
	_, errOut = expect(1, "buckets", "delete", "scratch")
	contains("buckets delete of a deleted bucket", errOut, `no bucket "scratch"`)

	// jobs -o wide, and the connection after the command, without scheme.
	bare := strings.TrimPrefix(s.URL, "http://")
	_, errOut = expect(0, "run", "--name", "wide-e2e", "--", "echo", "hi")
	job := submitted.FindStringSubmatch(errOut)[1]
	out, errOut, code := clientRun(t, []string{"LEVERS9_CONFIG=" + config}, "", "jobs", "-o", "wide", "--server", bare, "--token", c.Token)
	if code != 0 {
		t.Fatalf("jobs -o wide --server %s: exit %d, %s", bare, code, errOut)
	}
	contains("jobs -o wide", out, "OWNER", "NODE", "GPUS", job, "wide-e2e", "COMPLETE", c.AdminEmail, "local")

	// queue: a drained node leaves a job pending, with the reason.
	expect(0, "node", "drain", "local")
	out, _ = expect(0, "run", "-d", "--name", "waits-e2e", "--", "true")
	pending := strings.TrimSpace(out)
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ = expect(0, "queue")
		line := lineWith(out, pending)
		if line != "" && !strings.Contains(line, "waiting to be scheduled") {
			contains("queue", out, "REASON", "WAITING", "waits-e2e", c.AdminEmail)
			if strings.HasSuffix(strings.TrimSpace(line), " -") {
				t.Fatalf("queue shows no reason for %s:\n%s", pending, out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue never showed %s with the scheduler's reason:\n%s", pending, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	out, _ = expect(0, "queue", "--json")
	if !strings.Contains(out, pending) || strings.Contains(out, job) {
		t.Fatalf("queue --json lists other than the pending jobs:\n%s", out)
	}
	out, _ = expect(0, "top")
	contains("top", out, "NODE", "GPUS BOOKED", "CPUS BOOKED", "local", "ONLINE,draining")
	expect(0, "cancel", pending)
	expect(0, "node", "undrain", "local")

	// Ctrl-C stops following a run: 130, the job keeps running.
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "run", "--", "sleep", "60")
	cmd.Env = append(cleanEnv(), env...)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for !submitted.MatchString(stderr.String()) {
		if ctx.Err() != nil {
			t.Fatalf("run never said the job was submitted: %s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // following
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 130 {
		t.Fatalf("run after Ctrl-C: %v, want exit 130\n%s", err, stderr.String())
	}
	contains("run's stderr after Ctrl-C", stderr.String(), "keeps running")
	expect(0, "cancel", submitted.FindStringSubmatch(stderr.String())[1])

	// A password login leaves its API token and no open session.
	_, _, code = clientRun(t, []string{"LEVERS9_CONFIG=" + config}, c.AdminEmail+"\n"+c.AdminPassword+"\n",
		"login", "--server", bare, "--name", "pw")
	if code != 0 {
		t.Fatal("password login failed")
	}
	var tokens []struct {
		Kind      string
		RevokedAt *time.Time
	}
	out, _, _ = clientRun(t, []string{"LEVERS9_CONFIG=" + config}, "", "token", "list", "--json")
	if err := json.Unmarshal([]byte(out), &tokens); err != nil {
		t.Fatalf("token list --json: %v\n%s", err, out)
	}
	sessions := 0
	for _, tok := range tokens {
		if tok.Kind == "SESSION" {
			sessions++
			if tok.RevokedAt == nil {
				t.Fatalf("the login's sign-in session is still open:\n%s", out)
			}
		}
	}
	if sessions == 0 {
		t.Fatalf("token list shows no session; the check proves nothing:\n%s", out)
	}
}

// lineWith is the first line of out containing s, or "".
func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
