package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// recordingAPI answers every GraphQL request with an empty but valid
// answer and records what it was sent.
type recordingAPI struct {
	mu       sync.Mutex
	requests []recordedRequest
}

type recordedRequest struct {
	Token     string
	Query     string
	Variables map[string]any
}

func (f *recordingAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req recordedRequest
	_ = json.NewDecoder(r.Body).Decode(&req)
	req.Token = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	switch {
	case strings.Contains(req.Query, "submitJob"):
		fmt.Fprint(w, `{"data":{"submitJob":{"id":"job_1"}}}`)
	case strings.Contains(req.Query, "cancelJob"):
		fmt.Fprintf(w, `{"data":{"cancelJob":{"id":%q,"status":"CANCELLED","statusReason":"cancelled"}}}`, req.Variables["id"])
	case strings.Contains(req.Query, "createAPIToken"):
		fmt.Fprint(w, `{"data":{"createAPIToken":{"token":"lv9_new","apiToken":{"id":"tok_1","name":"ci"}}}}`)
	default:
		fmt.Fprint(w, `{"data":{"jobs":{"edges":[],"pageInfo":{"hasNextPage":false}}}}`)
	}
}

func (f *recordingAPI) last(t *testing.T) recordedRequest {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) == 0 {
		t.Fatal("no request reached the server")
	}
	return f.requests[len(f.requests)-1]
}

// runCLI runs a command line and returns its exit code, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// The connection flags are global: before the command or after it, or
// after its arguments, they choose the same context.
func TestGlobalFlagsBeforeOrAfterTheCommand(t *testing.T) {
	api := &recordingAPI{}
	srv := httptest.NewServer(api)
	defer srv.Close()
	config := filepath.Join(t.TempDir(), "config")
	raw := fmt.Sprintf(`{"current":"other","contexts":{"prod":{"server":%q,"token":"lv9_prod"},"other":{"server":"http://127.0.0.1:1","token":"lv9_other"}}}`, srv.URL)
	if err := os.WriteFile(config, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LEVERS9_CONFIG", config)
	t.Setenv("LEVERS9_SERVER", "")
	t.Setenv("LEVERS9_TOKEN", "")
	for _, args := range [][]string{
		{"-c", "prod", "jobs"},
		{"--context", "prod", "jobs", "--json"},
		{"--json", "--context=prod", "jobs"},
		{"jobs", "-c", "prod"},
		{"cancel", "job_9", "-c", "prod"},
		{"-c", "prod", "job", "show", "job_9"},
		{"job", "-c", "prod", "show", "job_9"},
	} {
		code, _, stderr := runCLI(t, args...)
		if args[len(args)-1] == "job_9" && args[0] != "cancel" {
			// The fake answers no job: NOT_FOUND, but from the right server.
			if code != exitError || !strings.Contains(stderr, "NOT_FOUND") {
				t.Errorf("%q: exit %d, %s", args, code, stderr)
			}
		} else if code != exitOK {
			t.Errorf("%q: exit %d, %s", args, code, stderr)
		}
		if got := api.last(t).Token; got != "lv9_prod" {
			t.Errorf("%q: token %q, want the prod context's", args, got)
		}
	}
	for _, args := range [][]string{{"-c", "nosuch", "jobs"}, {"jobs", "-c", "nosuch"}} {
		if code, _, stderr := runCLI(t, args...); code != exitUsage || !strings.Contains(stderr, `no context named "nosuch"`) {
			t.Errorf("%q: exit %d, %q; want 2 naming the context", args, code, stderr)
		}
	}
}

// Everything after -- (or after CMD) is the job's command line, flags
// included; run's own flags come before it.
func TestRunPassesTheCommandLineUntouched(t *testing.T) {
	t.Parallel()
	api := &recordingAPI{}
	srv := httptest.NewServer(api)
	defer srv.Close()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--", "sh", "-c", "echo -n hi", "--json"}, []string{"sh", "-c", "echo -n hi", "--json"}},
		{[]string{"--", "--", "-d"}, []string{"--", "-d"}},
		{[]string{"python", "-u", "train.py", "-c", "x", "--server", "y"}, []string{"python", "-u", "train.py", "-c", "x", "--server", "y"}},
		{[]string{"--timeout", "1d", "--name", "n", "echo", "--", "x"}, []string{"echo", "--", "x"}},
	} {
		args := append([]string{"submit", "--server", srv.URL, "--token", "lv9_x"}, tc.args...)
		code, stdout, stderr := runCLI(t, args...)
		if code != exitOK || stdout != "job_1\n" {
			t.Fatalf("%q: exit %d, %q, %q", args, code, stdout, stderr)
		}
		svc := api.last(t).Variables["s"].(map[string]any)["services"].([]any)[0].(map[string]any)
		var got []string
		for _, a := range svc["command"].([]any) {
			got = append(got, a.(string))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: command %q, want %q", tc.args, got, tc.want)
		}
	}
	if spec := api.last(t).Variables["s"].(map[string]any); spec["timeoutSeconds"] != float64(86400) {
		t.Errorf("--timeout 1d: %v seconds", spec["timeoutSeconds"])
	}
}

// Durations of the command line take days: token create --expires 30d.
func TestTokenExpiresInDays(t *testing.T) {
	t.Parallel()
	api := &recordingAPI{}
	srv := httptest.NewServer(api)
	defer srv.Close()
	before := time.Now()
	code, stdout, stderr := runCLI(t, "token", "create", "--server", srv.URL, "--token", "lv9_x", "--expires", "30d", "ci")
	if code != exitOK || !strings.Contains(stdout, "lv9_new") {
		t.Fatalf("exit %d, %q, %q", code, stdout, stderr)
	}
	expires, err := time.Parse(time.RFC3339, api.last(t).Variables["e"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if d := expires.Sub(before); d < 30*24*time.Hour-time.Minute || d > 30*24*time.Hour+time.Minute {
		t.Errorf("expires in %v, want 30 days", d)
	}
	if code, _, _ := runCLI(t, "token", "create", "--server", srv.URL, "--token", "lv9_x", "--expires", "-1d", "ci"); code != exitUsage {
		t.Errorf("--expires -1d: exit %d, want 2", code)
	}
}

// Bad usage exits 2, with what was wrong and where help is; help exits 0.
func TestUsageExitCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want int
		says string
	}{
		{[]string{"jobs", "--bogus"}, exitUsage, "unknown flag: --bogus"},
		{[]string{"--bogus", "jobs"}, exitUsage, "unknown flag: --bogus"},
		{[]string{"logs", "job_1", "--nope"}, exitUsage, "unknown flag: --nope"},
		{[]string{"nosuchcommand"}, exitUsage, `unknown command "nosuchcommand"`},
		{[]string{"token", "frob"}, exitUsage, `unknown subcommand "frob"`},
		{[]string{"token"}, exitUsage, "levers9 token create"},
		{[]string{"job"}, exitUsage, "levers9 job show"},
		{[]string{"node", "drain"}, exitUsage, "usage: levers9 node drain|undrain NAME"},
		{[]string{"run", "--timeout", "0", "--", "true"}, exitUsage, "--timeout"},
		{[]string{"run", "--timeout", "soon", "--", "true"}, exitUsage, "--timeout"},
		{[]string{"cancel", "--json", "job_1"}, exitUsage, "prints no JSON"},
		{[]string{"-c", "prod", "context", "list"}, exitUsage, "does not connect"},
		{[]string{"agent", "--bogus"}, exitUsage, "-bogus"},
		{[]string{}, exitUsage, "Usage:"},
		{[]string{"--help"}, exitOK, ""},
		{[]string{"help", "jobs"}, exitOK, ""},
		{[]string{"jobs", "-h"}, exitOK, ""},
		{[]string{"agent", "-h"}, exitOK, "-state-dir"},
		{[]string{"version"}, exitOK, ""},
	} {
		code, stdout, stderr := runCLI(t, tc.args...)
		if code != tc.want || !strings.Contains(stderr, tc.says) {
			t.Errorf("%q: exit %d, stderr %q; want %d saying %q", tc.args, code, stderr, tc.want, tc.says)
		}
		if tc.want == exitOK && tc.args[0] != "agent" && stdout == "" {
			t.Errorf("%q: nothing on stdout", tc.args)
		}
	}
	if _, stdout, _ := runCLI(t, "--help"); !strings.Contains(stdout, "levers9 -c prod jobs") || !strings.Contains(stdout, "30d") {
		t.Errorf("the usage says nothing of global flags or days:\n%s", stdout)
	}
}

// levers9 completion writes the shell's completion script, which asks
// levers9 itself (__complete) for commands and flags.
func TestCompletion(t *testing.T) {
	t.Parallel()
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, stdout, stderr := runCLI(t, "completion", shell)
		if code != exitOK || !strings.Contains(stdout, "__complete") {
			t.Errorf("completion %s: exit %d, %d bytes, %q", shell, code, len(stdout), stderr)
		}
	}
	code, stdout, _ := runCLI(t, "__complete", "jo")
	if code != exitOK || !strings.Contains(stdout, "jobs") || !strings.Contains(stdout, "job\t") {
		t.Errorf("__complete jo: exit %d, %q", code, stdout)
	}
	_, stdout, _ = runCLI(t, "__complete", "run", "--ti")
	if !strings.Contains(stdout, "--timeout") {
		t.Errorf("__complete run --ti: %q", stdout)
	}
}

// The follower of a log stream waits between resumptions, and stops
// waiting when its context ends.
func TestFollowStopsWithItsContext(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Every stream is dropped at once, without a line.
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	c := clientFlags{Server: srv.URL, Token: "lv9_x"}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.followLogs(ctx, "job_1", 1, func(logLine) {})
	if err != context.DeadlineExceeded {
		t.Fatalf("followLogs: %v, want the context's end", err)
	}
	if waited := time.Since(start); waited > 3*time.Second {
		t.Errorf("stopped %v after the start, long after its context ended", waited)
	}
}
