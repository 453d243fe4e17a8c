package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

const (
	testMetricsToken = "metrics-token-0123456789abcdef"
	rootEmail        = "root@metrics.test"
	rootPassword     = "superadmin password 1"
)

// startMetricsServer runs a server with a metrics token and a known
// superadmin, without a node, and returns its URL and the admin's token.
func startMetricsServer(t *testing.T, args ...string) (url, token string) {
	t.Helper()
	env := map[string]string{"LEVERS9_METRICS_TOKEN": testMetricsToken, "LEVERS9_SUPERADMIN_EMAIL": rootEmail, "LEVERS9_SUPERADMIN_PASSWORD": rootPassword}
	return runTestServer(t, env, nil, args...)
}

// graphQL posts query as token and decodes the answer's data into out;
// it returns the errors' codes.
func graphQL(t *testing.T, url, token, query string, vars map[string]any, out any) []string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, url+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Data   json.RawMessage
		Errors []struct{ Extensions struct{ Code string } }
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, e := range r.Errors {
		codes = append(codes, e.Extensions.Code)
	}
	if out != nil && len(r.Data) > 0 {
		if err := json.Unmarshal(r.Data, out); err != nil {
			t.Fatal(err)
		}
	}
	return codes
}

// getMetrics GETs url/metrics with authorization (a whole header value)
// and returns the status and body.
func getMetrics(t *testing.T, url, authorization string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/metrics", nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func parseMetrics(t *testing.T, body string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing the scrape: %v", err)
	}
	return mfs
}

// sample is the value of family name's series with labels (gauges and
// counters; a histogram's sample count), summed over other labels.
func sample(mfs map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	total := 0.0
next:
	for _, m := range mfs[name].GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		total += m.GetGauge().GetValue() + m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
	}
	return total
}

// On the public listener, /metrics answers the metrics token and a
// superadmin's API token only: anonymous callers, bad tokens, members and
// tenant admins are refused and learn nothing.
func TestMetricsOnlyForTheOperator(t *testing.T) {
	t.Parallel()
	url, admin := startMetricsServer(t)
	if codes := graphQL(t, url, admin, `mutation { createUser(input: {email: "m@levers9.local", password: "member password 1", role: MEMBER}) { id } }`, nil, nil); len(codes) > 0 {
		t.Fatalf("createUser: %v", codes)
	}
	var member, root struct{ SignIn struct{ Token string } }
	graphQL(t, url, "", `mutation { signIn(email: "m@levers9.local", password: "member password 1") { token } }`, nil, &member)
	if codes := graphQL(t, url, "", `mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { token } }`,
		map[string]any{"e": rootEmail, "p": rootPassword}, &root); len(codes) > 0 {
		t.Fatalf("superadmin signIn: %v", codes)
	}
	if member.SignIn.Token == "" || root.SignIn.Token == "" {
		t.Fatal("could not sign in the member and the superadmin")
	}
	for _, tc := range []struct {
		who, authorization string
		want               int
	}{
		{"anonymous", "", http.StatusUnauthorized},
		{"a wrong token", "Bearer lv9_" + strings.Repeat("x", 52), http.StatusUnauthorized},
		{"the metrics token without Bearer", testMetricsToken, http.StatusUnauthorized},
		{"the metrics token changed", "Bearer " + testMetricsToken[:len(testMetricsToken)-1] + "x", http.StatusUnauthorized},
		{"a prefix of the metrics token", "Bearer " + testMetricsToken[:16], http.StatusUnauthorized},
		{"a member", "Bearer " + member.SignIn.Token, http.StatusForbidden},
		{"a tenant admin", "Bearer " + admin, http.StatusForbidden},
		{"a superadmin", "Bearer " + root.SignIn.Token, http.StatusOK},
		{"the metrics token", "Bearer " + testMetricsToken, http.StatusOK},
	} {
		status, body := getMetrics(t, url, tc.authorization)
		if status != tc.want {
			t.Errorf("%s: status %d, want %d", tc.who, status, tc.want)
		}
		if leaked := strings.Contains(body, "levers9_"); leaked != (tc.want == http.StatusOK) {
			t.Errorf("%s: status %d, metrics in the body: %v", tc.who, status, leaked)
		}
	}
}

// A pending job, API calls (one refused) and a file up and down move the
// numbers; the operation label is the root field, never the client's
// operation name.
func TestMetricsMoveInProcess(t *testing.T) {
	t.Parallel()
	url, admin := startMetricsServer(t)
	scrapeNow := func() map[string]*dto.MetricFamily {
		status, body := getMetrics(t, url, "Bearer "+testMetricsToken)
		if status != http.StatusOK {
			t.Fatalf("scrape: %d %s", status, body)
		}
		return parseMetrics(t, body)
	}
	before := scrapeNow()
	var sub struct{ SubmitJob struct{ ID string } }
	if codes := graphQL(t, url, admin, `mutation Whatever_9c1 { submitJob(spec: {name: "waits", queue: "default", services: [{name: "main", command: ["true"], cpu: 0.1, memoryMiB: 16}]}) { id } }`, nil, &sub); len(codes) > 0 {
		t.Fatalf("submitJob: %v", codes)
	}
	if codes := graphQL(t, url, "", `query Evil_4f2a { viewer { user { email } } }`, nil, nil); len(codes) == 0 || codes[0] != "UNAUTHENTICATED" {
		t.Fatalf("anonymous viewer: %v", codes)
	}
	// A file through the files API.
	var ids struct {
		Storages struct {
			Edges []struct{ Node struct{ ID string } }
		}
	}
	var groups struct {
		Groups struct {
			Edges []struct{ Node struct{ ID string } }
		}
	}
	graphQL(t, url, admin, `{ storages(where: {name: "local"}) { edges { node { id } } } }`, nil, &ids)
	graphQL(t, url, admin, `{ groups(where: {name: "everyone"}) { edges { node { id } } } }`, nil, &groups)
	if codes := graphQL(t, url, admin, `mutation($s: ID!, $g: ID!) { createBucket(input: {name: "results", storageID: $s, writeGroupIDs: [$g]}) { id } }`,
		map[string]any{"s": ids.Storages.Edges[0].Node.ID, "g": groups.Groups.Edges[0].Node.ID}, nil); len(codes) > 0 {
		t.Fatalf("createBucket: %v", codes)
	}
	data := bytes.Repeat([]byte("metrics "), 5000)
	req, _ := http.NewRequest(http.MethodPut, url+"/files/results/a.bin", bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload: %v %v", resp, err)
	}
	resp.Body.Close()
	req, _ = http.NewRequest(http.MethodGet, url+"/files/results/a.bin", nil)
	req.Header.Set("Authorization", "Bearer "+admin)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(resp.Body); !bytes.Equal(got, data) {
		t.Fatalf("download: %d bytes", len(got))
	}
	resp.Body.Close()
	after := scrapeNow()

	for _, m := range []struct {
		name    string
		labels  map[string]string
		atLeast float64
	}{
		{"levers9_graphql_operations_total", map[string]string{"operation": "submitJob", "type": "mutation", "code": "OK"}, 1},
		{"levers9_graphql_operation_seconds", map[string]string{"operation": "submitJob", "type": "mutation"}, 1},
		{"levers9_graphql_operations_total", map[string]string{"operation": "viewer", "type": "query", "code": "UNAUTHENTICATED"}, 1},
		{"levers9_files_bytes_total", map[string]string{"direction": "in"}, float64(len(data))},
		{"levers9_files_bytes_total", map[string]string{"direction": "out"}, float64(len(data))},
		{"levers9_scheduling_pass_seconds", nil, 1},
	} {
		if d := sample(after, m.name, m.labels) - sample(before, m.name, m.labels); d < m.atLeast {
			t.Errorf("%s%v moved by %v, want at least %v", m.name, m.labels, d, m.atLeast)
		}
	}
	// The database's state is this server's alone: exact.
	for _, m := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"levers9_jobs", map[string]string{"queue": "default", "state": "PENDING"}, 1},
		{"levers9_jobs", map[string]string{"state": "RUNNING"}, 0},
		{"levers9_jobs_pending", map[string]string{"queue": "default"}, 1},
		{"levers9_nodes", nil, 0},
	} {
		if got := sample(after, m.name, m.labels); got != m.want {
			t.Errorf("%s%v = %v, want %v", m.name, m.labels, got, m.want)
		}
	}
	if reasons := after["levers9_jobs_pending"].GetMetric(); len(reasons) != 1 {
		t.Errorf("pending reasons: %v", reasons)
	}
	if _, ok := after["levers9_river_jobs"]; !ok {
		t.Error("no levers9_river_jobs")
	}
	for name, mf := range after {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if v := l.GetValue(); strings.Contains(v, "Evil_4f2a") || strings.Contains(v, "Whatever_9c1") || strings.HasPrefix(v, "job_") {
					t.Errorf("%s has a label from a request or an ID: %s=%q", name, l.GetName(), v)
				}
			}
		}
	}
}

// The tenant label is there only when asked for, and a short metrics token
// is refused at start.
func TestMetricsConfig(t *testing.T) {
	t.Parallel()
	url, admin := startMetricsServer(t, "--metrics-tenant-label")
	graphQL(t, url, admin, `mutation { submitJob(spec: {name: "waits", queue: "default", services: [{name: "main", command: ["true"], cpu: 0.1, memoryMiB: 16}]}) { id } }`, nil, nil)
	_, body := getMetrics(t, url, "Bearer "+testMetricsToken)
	mfs := parseMetrics(t, body)
	jobs := mfs["levers9_jobs"].GetMetric()
	if len(jobs) != 1 {
		t.Fatalf("levers9_jobs: %v", jobs)
	}
	tenant := ""
	for _, l := range jobs[0].GetLabel() {
		if l.GetName() == "tenant" {
			tenant = l.GetValue()
		}
	}
	if tenant == "" || strings.HasPrefix(tenant, "ten_") {
		t.Errorf("tenant label %q, want the first tenant's slug", tenant)
	}

	for _, tc := range []struct {
		args []string
		env  map[string]string
		ok   bool
	}{
		{[]string{"--metrics-token=short"}, nil, false},
		{nil, map[string]string{"LEVERS9_METRICS_TOKEN": "short"}, false},
		{[]string{"--metrics-token=" + testMetricsToken, "--metrics-addr=127.0.0.1:0", "--metrics-tenant-label"}, nil, true},
		{nil, map[string]string{"LEVERS9_METRICS_TENANT_LABEL": "maybe"}, false},
	} {
		lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
		var out bytes.Buffer
		_, err := parseServerConfig(tc.args, lookup, &out)
		if (err == nil) != tc.ok {
			t.Errorf("%v %v: err %v, want ok %v", tc.args, tc.env, err, tc.ok)
		}
	}
}
