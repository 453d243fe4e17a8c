package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

const testMetricsToken = "metrics-token-0123456789abcdef"

// startMetricsServer runs a server with a metrics token, without a node,
// and returns its URL and the admin's token. Who may scrape, and that the
// numbers move with real work, is e2e's TestMetrics*: real binaries on
// both databases.
func startMetricsServer(t *testing.T, args ...string) (url, token string) {
	t.Helper()
	env := map[string]string{"LEVERS9_METRICS_TOKEN": testMetricsToken}
	return runTestServer(t, env, nil, args...)
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

// The tenant label is there only when asked for, and a short metrics token
// is refused at start.
func TestMetricsConfig(t *testing.T) {
	t.Parallel()
	url, admin := startMetricsServer(t, "--metrics-tenant-label")
	gqlPost(t, url, admin, "", `mutation { submitJob(spec: {name: "waits", queue: "default", services: [{name: "main", command: ["true"], cpu: 0.1, memoryMiB: 16}]}) { id } }`, nil, nil)
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
