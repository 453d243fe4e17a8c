package e2e

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
)

// cli runs a client command of the binary against s and returns its
// stdout, stderr and exit code.
func cli(t *testing.T, s *server, token string, args ...string) (string, string, int) {
	t.Helper()
	return clientRun(t, []string{"LEVERS9_SERVER=" + s.URL, "LEVERS9_TOKEN=" + token}, "", args...)
}

var submitted = regexp.MustCompile(`job (job_\w+) submitted`)

// `levers9 run` on the built-in local node prints the command's output and
// exits with its code; `levers9 logs` replays it, from any line.
func TestRunAndLogs(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir(), dbtest.SQLiteURL(t))
	token := s.credentials().Token

	out, errOut, code := cli(t, s, token, "run", "--", "echo", "hello")
	if code != 0 || out != "hello\n" {
		t.Fatalf("run echo hello: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	out, errOut, code = cli(t, s, token, "run", "--name", "fails", "--", "sh", "-c", "echo one; sleep 0.3; echo two >&2; sleep 0.3; echo three; exit 3")
	if code != 3 || out != "one\nthree\n" || !bytes.Contains([]byte(errOut), []byte("two\n")) {
		t.Fatalf("run exit 3: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	m := submitted.FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("no job ID in %q", errOut)
	}
	out, errOut, code = cli(t, s, token, "logs", m[1])
	if code != 0 || out != "main | one\nmain ! two\nmain | three\n" {
		t.Fatalf("logs: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, errOut, code = cli(t, s, token, "logs", "-f", "--from", "2", m[1])
	if code != 0 || out != "main ! two\nmain | three\n" {
		t.Fatalf("logs -f --from 2: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	_, errOut, code = cli(t, s, token, "run", "--", "/no/such/command")
	if code != 1 || !bytes.Contains([]byte(errOut), []byte("no such file")) {
		t.Fatalf("run of a missing command: exit %d, stderr %q", code, errOut)
	}
	s.stop()
}
