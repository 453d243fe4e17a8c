package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
)

// cliLong is cli for commands that move a million lines: on a loaded
// machine they may take longer than startTimeout.
func cliLong(t *testing.T, s *server, token string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(cleanEnv(), "LEVERS9_SERVER="+s.URL, "LEVERS9_TOKEN="+token)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	}
	t.Fatalf("levers9 %v: %v", args, err)
	return "", "", -1
}

// seqOutput is what `seq 1 n` prints, each line with prefix.
func seqOutput(prefix string, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(prefix)
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
	}
	return b.String()
}

// checkSame compares two long outputs by line count, first and last line
// and checksum, and says where they part.
func checkSame(t *testing.T, what, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	g, w := strings.Split(strings.TrimSuffix(got, "\n"), "\n"), strings.Split(strings.TrimSuffix(want, "\n"), "\n")
	at := 0
	for at < len(g) && at < len(w) && g[at] == w[at] {
		at++
	}
	gotAt := "(none)"
	if at < len(g) {
		gotAt = g[at]
	}
	t.Errorf("%s: %d lines (first %q, last %q, sha256 %x), want %d (first %q, last %q, sha256 %x); line %d is %q, want %q",
		what, len(g), g[0], g[len(g)-1], sha256.Sum256([]byte(got)), len(w), w[0], w[len(w)-1], sha256.Sum256([]byte(want)),
		at+1, gotAt, w[min(at, len(w)-1)])
}

// Issue 12, item 16: `levers9 run -- seq 1 1000000` on the built-in node
// lost lines 200,001 to about 935,000 and the last 47,029, silently. Every
// line is stored, in order, and the CLI's live output has them all.
func TestMillionLinesAllStored(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("prints a million lines")
	}
	const n = 1_000_000
	dbtest.Each(t, func(t *testing.T, url string) {
		s := startServer(t, t.TempDir(), url)
		token := s.credentials().Token
		out, errOut, code := cliLong(t, s, token, "run", "--", "seq", "1", strconv.Itoa(n))
		if code != 0 {
			t.Fatalf("run seq: exit %d, stderr %q", code, errOut)
		}
		checkSame(t, "levers9 run's output", out, seqOutput("", n))
		m := submitted.FindStringSubmatch(errOut)
		if m == nil {
			t.Fatalf("no job ID in %q", errOut)
		}
		stored, errOut, code := cliLong(t, s, token, "logs", m[1])
		if code != 0 {
			t.Fatalf("logs: exit %d, stderr %q", code, errOut)
		}
		checkSame(t, "the stored log", stored, seqOutput("main | ", n))
		s.stop()
	})
}

// Over the operator's per-job log quota lines are dropped, and the stored
// log says exactly which: the first dropped line's place says the quota was
// reached, the last one's names the dropped range.
func TestLogQuotaNamesDroppedLines(t *testing.T) {
	t.Parallel()
	const n, quota = 100_000, 100_000
	// Lines fit while their bytes, newlines counted, stay within the quota.
	kept, used := 0, 0
	for i := 1; i <= n; i++ {
		size := len(strconv.Itoa(i)) + 1
		if used+size > quota {
			break
		}
		kept, used = kept+1, used+size
	}
	dropped, droppedBytes := n-kept, 0
	for i := kept + 1; i <= n; i++ {
		droppedBytes += len(strconv.Itoa(i)) + 1
	}
	dbtest.Each(t, func(t *testing.T, url string) {
		s := startServer(t, t.TempDir(), url, "LEVERS9_JOB_LOG_QUOTA="+strconv.Itoa(quota))
		token := s.credentials().Token
		out, errOut, code := cli(t, s, token, "run", "--", "seq", "1", strconv.Itoa(n))
		if code != 0 {
			t.Fatalf("run seq: exit %d, stderr %q", code, errOut)
		}
		checkSame(t, "levers9 run's output", out, seqOutput("", kept))
		m := submitted.FindStringSubmatch(errOut)
		if m == nil {
			t.Fatalf("no job ID in %q", errOut)
		}
		notice := fmt.Sprintf("levers9: per-job log quota 97.7 KiB reached at line %d of main: this line and the job's later lines are dropped", kept+1)
		report := fmt.Sprintf("levers9: lines %d–%d of main dropped (%d lines, %.1f KiB): per-job log quota 97.7 KiB reached", kept+1, n, dropped, float64(droppedBytes)/1024)
		for _, want := range []string{notice, report} {
			if !strings.Contains(errOut, want+"\n") {
				t.Errorf("levers9 run's stderr lacks %q:\n%s", want, errOut)
			}
		}
		stored, errOut, code := cli(t, s, token, "logs", m[1])
		if code != 0 {
			t.Fatalf("logs: exit %d, stderr %q", code, errOut)
		}
		checkSame(t, "the stored log", stored, seqOutput("main | ", kept)+"main # "+notice+"\nmain # "+report+"\n")
		s.stop()
	})
}
