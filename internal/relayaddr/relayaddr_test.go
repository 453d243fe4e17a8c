package relayaddr

import (
	"strings"
	"testing"
)

func TestParseHost(t *testing.T) {
	t.Parallel()
	const d = "relay.example.com"
	for _, tc := range []struct {
		host, job, svc, port string
		ok                   bool
	}{
		{"8080-web-job_01jabc.relay.example.com", "job_01jabc", "web", "8080", true},
		{"http-web-job_01jabc.relay.example.com", "job_01jabc", "web", "http", true},
		{"http-my-web-app-job_01jabc.relay.example.com", "job_01jabc", "my-web-app", "http", true},
		{"HTTP-Web-JOB_01JABC.Relay.Example.COM", "job_01jabc", "web", "http", true},
		{"http-web-job_01jabc.relay.example.com:8443", "job_01jabc", "web", "http", true},
		{"http-web-job_01jabc.relay.example.com.", "job_01jabc", "web", "http", true},
		{"relay.example.com", "", "", "", false},
		{"x.relay.example.com", "", "", "", false},
		{"http-job_01jabc.relay.example.com", "", "", "", false},         // no service
		{"http--job_01jabc.relay.example.com", "", "", "", false},        // empty service
		{"http-web--job_01jabc.relay.example.com", "", "", "", false},    // service ends with '-'
		{"-web-job_01jabc.relay.example.com", "", "", "", false},         // no port
		{"http-web-.relay.example.com", "", "", "", false},               // no job
		{"a.http-web-job_01jabc.relay.example.com", "", "", "", false},   // deeper
		{"http-web-job_01jabc.evilrelay.example.com", "", "", "", false}, // another domain
		{"http-web-job_01jabc.relay.example.com.evil.org", "", "", "", false},
		{"http-web-job_01jabc.relay.example.com:x", "", "", "", false},
		{"http-we_b-job_01jabc.relay.example.com", "", "", "", false},
		{"[::1]:80", "", "", "", false},
		{"127.0.0.1:8080", "", "", "", false},
		{"", "", "", "", false},
	} {
		job, svc, port, ok := ParseHost(tc.host, d)
		if ok != tc.ok || job != tc.job || svc != tc.svc || port != tc.port {
			t.Errorf("ParseHost(%q) = %q, %q, %q, %v; want %q, %q, %q, %v", tc.host, job, svc, port, ok, tc.job, tc.svc, tc.port, tc.ok)
		}
	}
	if _, _, _, ok := ParseHost("http-web-job_1.relay.example.com", ""); ok {
		t.Error("no domain: a host was parsed")
	}
}

// Whatever parses is spelled back the same by Host (the one
// spelling the dashboard prints), and is made of host-safe bytes only.
func FuzzParseHost(f *testing.F) {
	for _, s := range []string{"8080-web-job_01jabc.relay.example.com", "http-a-b-c-job_x.relay.example.com:1", "-.relay.example.com", "a--b.relay.example.com"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		job, svc, port, ok := ParseHost(host, "relay.example.com")
		if !ok {
			return
		}
		h := strings.TrimSuffix(strings.ToLower(host), ".")
		if i := strings.LastIndexByte(h, ':'); i > 0 {
			h = strings.TrimSuffix(h[:i], ".")
		}
		if got := Host("relay.example.com", job, svc, port); got != h {
			t.Fatalf("ParseHost(%q) = %q %q %q, spelled back %q", host, job, svc, port, got)
		}
		for _, s := range []string{job, svc, port} {
			if s == "" || strings.ContainsAny(s, ".:/@?#%\\ ") {
				t.Fatalf("ParseHost(%q) gave part %q", host, s)
			}
		}
		if strings.Contains(port, "-") || strings.Contains(job, "-") {
			t.Fatalf("ParseHost(%q): port %q or job %q holds '-'", host, port, job)
		}
	})
}
