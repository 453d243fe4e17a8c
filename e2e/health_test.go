package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
)

// readyz is GET /readyz: the status code and the report.
func readyz(t *testing.T, base string) (int, readyReport) {
	t.Helper()
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r readyReport
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("/readyz answered %d %q: %v", resp.StatusCode, body, err)
	}
	return resp.StatusCode, r
}

type readyReport struct {
	Status  string
	Checks  map[string]string
	Version string
	Commit  string
}

// A running server is ready: every check passes and /readyz names the
// build `levers9 version` prints. On SIGTERM /readyz turns 503 at once
// while the server keeps serving for --drain-delay, then it exits 0; a
// second signal cuts the drain short.
func TestReadyzAndDrainOnSIGTERM(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		const delay = 3 * time.Second
		s := startServer(t, t.TempDir(), url, "LEVERS9_LOCAL_NODE=false", "LEVERS9_DRAIN_DELAY="+delay.String())
		c := s.credentials()

		// Ready soon after it serves (a probe may catch its database busy).
		var code int
		var r readyReport
		poll(t, "/readyz to pass", func() bool { code, r = readyz(t, s.URL); return code == http.StatusOK })
		if r.Status != "ok" {
			t.Fatalf("/readyz of a running server: %d %+v", code, r)
		}
		for _, name := range []string{"database", "migrations", "river", "storage", "draining"} {
			if r.Checks[name] != "ok" {
				t.Errorf("check %s = %q, want ok", name, r.Checks[name])
			}
		}
		out, _ := levers9(t, "version")
		if first := strings.SplitN(out, "\n", 2)[0]; r.Version == "" || first != "levers9 "+r.Version || !strings.Contains(out, "commit  "+r.Commit) {
			t.Errorf("/readyz names version %q commit %q; levers9 version says:\n%s", r.Version, r.Commit, out)
		}
		checkHealthy(t, s.URL)

		signalled := time.Now()
		if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		// Unready at once (the first probe after the signal is handled),
		// still serving: probes, and GraphQL for the requests in flight.
		poll(t, "/readyz to fail after SIGTERM", func() bool { code, _ := readyz(t, s.URL); return code == http.StatusServiceUnavailable })
		if code, r := readyz(t, s.URL); code != http.StatusServiceUnavailable || r.Status != "unavailable" || r.Checks["draining"] == "ok" || r.Checks["database"] != "ok" {
			t.Errorf("/readyz while draining: %d %+v", code, r)
		}
		checkHealthy(t, s.URL)
		var v viewerData
		gql(t, s.URL, c.Token, `{ viewer { user { email } tenant { name } } }`, nil, &v)
		v.check(t, "admin@levers9.local", "Default")
		select {
		case <-s.exited:
			t.Fatalf("the server exited %v after SIGTERM, before its drain delay of %v", time.Since(signalled), delay)
		default:
		}
		select {
		case <-s.exited:
		case <-time.After(stopTimeout):
			t.Fatalf("server still running %v after SIGTERM", stopTimeout)
		}
		if s.waitErr != nil {
			t.Fatalf("server exited with %v after draining, want status 0", s.waitErr)
		}
		if d := time.Since(signalled); d < delay {
			t.Errorf("the server stopped %v after SIGTERM, before its drain delay of %v", d, delay)
		}
	})

	// A long drain, cut short by a second signal.
	s := startServer(t, t.TempDir(), dbtest.SQLiteURL(t), "LEVERS9_LOCAL_NODE=false", "LEVERS9_DRAIN_DELAY=1h")
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	poll(t, "/readyz to fail after SIGTERM", func() bool { code, _ := readyz(t, s.URL); return code == http.StatusServiceUnavailable })
	s.stop() // the second SIGTERM; stop fails unless the server exits 0 soon
}
