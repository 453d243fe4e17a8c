package e2e

import (
	"crypto/rand"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/levers9/levers9/internal/dbtest"
)

// A server doing real work (a job that runs on the built-in node and
// logs, one that waits, one that can never fit, a file up and down, API
// calls) moves its metrics, read with Prometheus' own text parser from the
// main listener (with the metrics token) and from --metrics-addr.
func TestMetricsMoveWithRealWork(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		token := newSecret()
		internal := freeAddr(t)
		s := startServer(t, t.TempDir(), url, "LEVERS9_METRICS_TOKEN="+token, "LEVERS9_METRICS_ADDR="+internal)
		c := s.credentials()
		waitLocalNode(t, s.URL, c.Token)
		before := scrape(t, s.URL+"/metrics", token)

		// A job that runs, logs three lines and ends; `levers9 run` follows
		// its log.
		if out, errOut, code := cli(t, s, c.Token, "run", "--", "sh", "-c", "echo one; echo two; echo three"); code != 0 || out != "one\ntwo\nthree\n" {
			t.Fatalf("run: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		// One that runs until cancelled, and one no node is large enough for.
		var long, huge struct{ SubmitJob struct{ ID string } }
		gql(t, s.URL, c.Token, `mutation { submitJob(spec: {name: "long", queue: "default", services: [{name: "main", command: ["sleep", "600"], cpu: 0.1, memoryMiB: 16}]}) { id } }`, nil, &long)
		gql(t, s.URL, c.Token, `mutation { submitJob(spec: {name: "huge", queue: "default", services: [{name: "main", command: ["true"], cpu: 0.1, memoryMiB: 262144}]}) { id } }`, nil, &huge)
		poll(t, "the long job to run", func() bool { return jobByID(t, s.URL, c.Token, long.SubmitJob.ID).Status == "RUNNING" })
		poll(t, "the huge job to be found too large", func() bool {
			return strings.Contains(jobByID(t, s.URL, c.Token, huge.SubmitJob.ID).StatusReason, "large enough")
		})
		// A file up and down through the files API.
		size := uploadAndDownload(t, s, c.Token)
		// Refused API calls: no token (UNAUTHENTICATED), under a free-text
		// operation name that must not become a label.
		if errs := gqlErrors(t, s.URL, "", `query Evil_4f2a { viewer { user { email } } }`, nil); len(errs) == 0 {
			t.Fatal("an anonymous viewer query succeeded")
		}

		after := scrape(t, s.URL+"/metrics", token)
		for _, m := range []struct {
			name    string
			labels  map[string]string
			atLeast float64
		}{
			{"levers9_job_start_wait_seconds_count", map[string]string{"kind": "JOB"}, 2},
			{"levers9_scheduling_placements_total", nil, 2},
			{"levers9_jobs_ended_total", map[string]string{"state": "COMPLETE"}, 1},
			{"levers9_scheduling_pass_seconds_count", nil, 2},
			{"levers9_log_lines_ingested_total", nil, 3},
			{"levers9_log_lines_delivered_total", nil, 3},
			{"levers9_files_bytes_total", map[string]string{"direction": "in"}, float64(size)},
			{"levers9_files_bytes_total", map[string]string{"direction": "out"}, float64(size)},
			{"levers9_graphql_operations_total", map[string]string{"operation": "submitJob", "type": "mutation", "code": "OK"}, 2},
			{"levers9_graphql_operation_seconds_count", map[string]string{"operation": "submitJob", "type": "mutation"}, 2},
			{"levers9_graphql_operations_total", map[string]string{"operation": "viewer", "type": "query", "code": "UNAUTHENTICATED"}, 1},
		} {
			if d := value(after, m.name, m.labels) - value(before, m.name, m.labels); d < m.atLeast {
				t.Errorf("%s%v moved by %v, want at least %v", m.name, m.labels, d, m.atLeast)
			}
		}
		// State from the database, exact: this server's database only.
		for _, m := range []struct {
			name   string
			labels map[string]string
			want   float64
		}{
			{"levers9_jobs", map[string]string{"queue": "default", "state": "RUNNING"}, 1},
			{"levers9_jobs", map[string]string{"queue": "default", "state": "PENDING"}, 1},
			{"levers9_jobs_pending", map[string]string{"queue": "default", "reason": "too_large"}, 1},
			{"levers9_nodes", map[string]string{"state": "online"}, 1},
		} {
			if got := value(after, m.name, m.labels); got != m.want {
				t.Errorf("%s%v = %v, want %v", m.name, m.labels, got, m.want)
			}
		}
		// (The meter's first tick comes when River's periodic job runs: not
		// within this test on every database.)
		// The built-in node joined and connected once: its first connection.
		for _, m := range []struct {
			name   string
			labels map[string]string
		}{{"levers9_agent_connections", nil}, {"levers9_agent_connects_total", map[string]string{"kind": "first"}}} {
			if got := value(after, m.name, m.labels); got < 1 {
				t.Errorf("%s%v = %v, want at least 1", m.name, m.labels, got)
			}
		}
		if _, ok := after["levers9_river_jobs"]; !ok {
			t.Error("no levers9_river_jobs")
		}
		for name, mf := range after {
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if strings.Contains(l.GetValue(), "Evil_4f2a") || strings.HasPrefix(l.GetValue(), "job_") {
						t.Errorf("%s has a label from a request or an ID: %s=%q", name, l.GetName(), l.GetValue())
					}
				}
			}
		}
		// The internal listener serves the same, without a token.
		if got := scrape(t, "http://"+internal+"/metrics", ""); value(got, "levers9_nodes", map[string]string{"state": "online"}) != 1 {
			t.Errorf("--metrics-addr: levers9_nodes{state=online} = %v", value(got, "levers9_nodes", map[string]string{"state": "online"}))
		}
		expectCLI(t, s, c.Token, 0, "cancel", long.SubmitJob.ID)
		s.stop()
	})
}

// On the public listener, /metrics answers the metrics token and a
// superadmin's API token only; everyone else learns nothing.
func TestMetricsRefuseAnyoneButTheOperator(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		token := newSecret()
		const rootEmail, rootPassword = "root@metrics.test", "superadmin password 1"
		s := startServer(t, t.TempDir(), url, "LEVERS9_METRICS_TOKEN="+token,
			"LEVERS9_SUPERADMIN_EMAIL="+rootEmail, "LEVERS9_SUPERADMIN_PASSWORD="+rootPassword)
		c := s.credentials()
		member := memberToken(t, s, c.Token)
		var signIn struct{ SignIn struct{ Token string } }
		gql(t, s.URL, "", `mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { token } }`,
			map[string]any{"e": rootEmail, "p": rootPassword}, &signIn)
		for _, tc := range []struct {
			who, authorization string
			want               int
		}{
			{"anonymous", "", http.StatusUnauthorized},
			{"a wrong token", "Bearer " + newSecret(), http.StatusUnauthorized},
			{"the token without Bearer", token, http.StatusUnauthorized},
			{"the token with one character changed", "Bearer " + token[:len(token)-1] + "x", http.StatusUnauthorized},
			{"a prefix of the token", "Bearer " + token[:16], http.StatusUnauthorized},
			{"a member", "Bearer " + member, http.StatusForbidden},
			{"a tenant admin", "Bearer " + c.Token, http.StatusForbidden},
			{"a superadmin", "Bearer " + signIn.SignIn.Token, http.StatusOK},
			{"the metrics token", "Bearer " + token, http.StatusOK},
		} {
			req, err := http.NewRequest(http.MethodGet, s.URL+"/metrics", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.authorization != "" {
				req.Header.Set("Authorization", tc.authorization)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("%s: status %d, want %d", tc.who, resp.StatusCode, tc.want)
			}
			if leaked := strings.Contains(string(body), "levers9_"); leaked != (tc.want == http.StatusOK) {
				t.Errorf("%s: status %d, body with metrics: %v", tc.who, resp.StatusCode, leaked)
			}
		}
		s.stop()
	})
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// scrape reads url's metrics with Prometheus' text parser.
func scrape(t testing.TB, url, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing %s: %v", url, err)
	}
	return mfs
}

// value is the value of the series of family name (a histogram's _count
// or _sum too) with the given labels, summed over other labels; 0 when
// there is none.
func value(mfs map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	family, part := name, ""
	if _, ok := mfs[name]; !ok {
		for _, suffix := range []string{"_count", "_sum"} {
			if base, ok := strings.CutSuffix(name, suffix); ok {
				family, part = base, suffix
			}
		}
	}
	total := 0.0
	for _, m := range mfs[family].GetMetric() {
		if !hasLabels(m, labels) {
			continue
		}
		switch {
		case part == "_count":
			total += float64(m.GetHistogram().GetSampleCount())
		case part == "_sum":
			total += m.GetHistogram().GetSampleSum()
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		case m.Untyped != nil:
			total += m.GetUntyped().GetValue()
		}
	}
	return total
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// uploadAndDownload puts a random file into a new bucket and reads it
// back through the files API (levers9 cp), returning its size.
func uploadAndDownload(t *testing.T, s *server, token string) int {
	t.Helper()
	var ids struct {
		Storages struct {
			Edges []struct{ Node struct{ ID string } }
		}
	}
	gql(t, s.URL, token, `{ storages(where: {name: "local"}) { edges { node { id } } } }`, nil, &ids)
	gql(t, s.URL, token, `mutation($s: ID!) { createBucket(input: {name: "metrics", storageID: $s}) { id } }`,
		map[string]any{"s": ids.Storages.Edges[0].Node.ID}, new(map[string]any))
	dir := t.TempDir()
	data := make([]byte, 100_000+int(randByte()))
	_, _ = rand.Read(data)
	up, down := filepath.Join(dir, "up.bin"), filepath.Join(dir, "down.bin")
	if err := os.WriteFile(up, data, 0o644); err != nil {
		t.Fatal(err)
	}
	expectCLI(t, s, token, 0, "cp", up, "metrics:f.bin")
	expectCLI(t, s, token, 0, "cp", "metrics:f.bin", down)
	if got, err := os.ReadFile(down); err != nil || len(got) != len(data) {
		t.Fatalf("downloaded %d bytes (%v), want %d", len(got), err, len(data))
	}
	return len(data)
}

func randByte() byte {
	b := make([]byte, 1)
	_, _ = rand.Read(b)
	return b[0]
}
