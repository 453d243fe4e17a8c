package e2e

import (
	"strconv"
	"testing"

	"github.com/levers9/levers9/internal/dockertest"
)

// Issue 42: on the built-in node's Docker runtime `levers9 run -- seq 1
// 1000000` stored 370,358 lines, an exact prefix, and the job was COMPLETE:
// the server stores more slowly than seq prints, the agent held the
// container's log back, and a 10 s drain after the container stopped cut
// the rest, which went with the container. Every line is stored, in order,
// and the CLI's live output has them all.
func TestMillionLinesAllStoredDocker(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("prints a million lines")
	}
	const n = 1_000_000
	image := dockertest.Busybox(t)
	// SQLite only: the runtime is what is tested, and the other test of a
	// million lines covers PostgreSQL's storing.
	s := startServer(t, t.TempDir(), "", "LEVERS9_LOCAL_NODE_RUNTIME=docker", "LEVERS9_LOCAL_NODE_DEFAULT_IMAGE="+image)
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
}
