package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// unavailableAPI answers its first len(retryAfter) requests 503
// UNAVAILABLE, as the server does while its database is down, with that
// Retry-After ("" for none); then every request as a submission. It
// records each request's variables and arrival.
type unavailableAPI struct {
	mu         sync.Mutex
	retryAfter []string
	always     bool // answer 503 forever, with retryAfter[0]
	vars       []map[string]any
	at         []time.Time
}

func (f *unavailableAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct{ Variables map[string]any }
	_ = json.NewDecoder(r.Body).Decode(&req)
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.vars)
	f.vars = append(f.vars, req.Variables)
	f.at = append(f.at, time.Now())
	w.Header().Set("Content-Type", "application/json")
	if f.always || n < len(f.retryAfter) {
		if ra := f.retryAfter[min(n, len(f.retryAfter)-1)]; ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"errors":[{"message":"the database cannot be reached now; try again shortly","extensions":{"code":"UNAVAILABLE","retryAfter":1}}],"data":null}`)
		return
	}
	fmt.Fprint(w, `{"data":{"submitJob":{"id":"job_1"},"viewer":{"user":{"email":"a@b.test"}}}}`)
}

func (f *unavailableAPI) requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.vars)
}

// seen is what arrived so far: each request's variables and time.
func (f *unavailableAPI) seen() ([]map[string]any, []time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.vars...), append([]time.Time(nil), f.at...)
}

func serveUnavailable(t *testing.T, f *unavailableAPI) clientFlags {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return clientFlags{Server: srv.URL, Token: "lv9_x"}
}

// A query is sent again while the server is unavailable, no sooner than
// its Retry-After, and succeeds once the server is back.
func TestQueryRetriesWhileUnavailable(t *testing.T) {
	t.Parallel()
	f := &unavailableAPI{retryAfter: []string{"1", ""}}
	c := serveUnavailable(t, f)
	var out struct {
		Viewer struct{ User struct{ Email string } }
	}
	if err := c.query(context.Background(), `{ viewer { user { email } } }`, nil, &out); err != nil {
		t.Fatalf("query: %v", err)
	}
	if out.Viewer.User.Email != "a@b.test" || f.requests() != 3 {
		t.Fatalf("got %+v after %d requests, want the answer after 3", out, f.requests())
	}
	if _, at := f.seen(); at[1].Sub(at[0]) < time.Second {
		t.Errorf("retried %s after a Retry-After of 1 s", at[1].Sub(at[0]))
	}
}

// A mutation that may not be harmless twice is sent once: the caller sees
// UNAVAILABLE.
func TestMutationIsNotRetried(t *testing.T) {
	t.Parallel()
	f := &unavailableAPI{retryAfter: []string{"1"}}
	c := serveUnavailable(t, f)
	var out any
	err := c.query(context.Background(), "# a comment\nmutation { createGroup(input: {name: \"g\"}) { id } }", nil, &out)
	if err == nil || !strings.HasPrefix(err.Error(), "UNAVAILABLE: ") || f.requests() != 1 {
		t.Fatalf("got %v after %d requests, want UNAVAILABLE after 1", err, f.requests())
	}
}

// levers9 submit retries its submission with the same idempotency key, so
// a submission the server did make before failing to answer is not made
// twice.
func TestSubmitRetriesWithItsIdempotencyKey(t *testing.T) {
	t.Parallel()
	f := &unavailableAPI{retryAfter: []string{""}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"submit", "--server", srv.URL, "--token", "lv9_x", "--", "true"}, &stdout, &stderr)
	if code != exitOK || strings.TrimSpace(stdout.String()) != "job_1" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	vars, _ := f.seen()
	if len(vars) != 2 {
		t.Fatalf("%d requests, want 2", len(vars))
	}
	k1, _ := vars[0]["k"].(string)
	k2, _ := vars[1]["k"].(string)
	if k1 == "" || k1 != k2 {
		t.Errorf("idempotency keys %q then %q, want one key twice", k1, k2)
	}
}

// Retries end with the window: a server that stays unavailable is
// reported, not waited for without end. Not parallel: it narrows the
// window for its own run.
func TestRetriesEndWithTheWindow(t *testing.T) {
	defer func(w time.Duration) { retryWindow = w }(retryWindow)
	retryWindow = 1500 * time.Millisecond
	f := &unavailableAPI{retryAfter: []string{"1"}, always: true}
	c := serveUnavailable(t, f)
	var out any
	err := c.query(context.Background(), `{ viewer { id } }`, nil, &out)
	if err == nil || !strings.HasPrefix(err.Error(), "UNAVAILABLE: ") {
		t.Fatalf("got %v, want UNAVAILABLE", err)
	}
	// Each wait is at least the asked 1 s: a 1.5 s window holds one retry.
	if n := f.requests(); n > 2 {
		t.Errorf("gave up after %d requests, want at most 2 in the 1.5 s window", n)
	}
}

func TestIsMutation(t *testing.T) {
	t.Parallel()
	for q, want := range map[string]bool{
		`mutation { a }`: true, "  # note\n\tmutation($x: ID!) { a }": true, `mutation{a}`: true,
		`{ a }`: false, `query { mutation }`: false, `mutations { a }`: false, "# mutation\n{ a }": false,
	} {
		if got := isMutation(q); got != want {
			t.Errorf("isMutation(%q) = %v, want %v", q, got, want)
		}
	}
}
