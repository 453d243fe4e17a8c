package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fakeAPI plays the server for `levers9 run`: a job whose log stream drops
// once mid-way and once completes before the job has ended (as a dropped
// SSE subscriber sees it), then ends in ERROR with exit code 7.
type fakeAPI struct {
	mu      sync.Mutex
	froms   []int     // fromSeq of each subscription
	streams int       // subscriptions served
	states  []string  // job status answered per state query, last repeats
	spec    chan bool // a submission arrived
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Query     string
		Variables map[string]any
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case strings.Contains(r.Header.Get("Accept"), "text/event-stream"):
		from := int(req.Variables["f"].(float64))
		f.froms = append(f.froms, from)
		f.streams++
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, ":\n\n")
		line := func(seq int) string {
			stream := "stdout"
			if seq == 2 {
				stream = "stderr"
			}
			return fmt.Sprintf(`{"seq":%d,"service":"main","stream":%q,"text":"line %d"}`, seq, stream, seq)
		}
		batch := func(seqs ...int) {
			var ls []string
			for _, s := range seqs {
				ls = append(ls, line(s))
			}
			fmt.Fprintf(w, "event: next\ndata: {\"data\":{\"jobLogBatches\":[%s]}}\n\n", strings.Join(ls, ","))
		}
		next := func(seq int) { batch(seq) }
		switch f.streams {
		case 1: // 1..3 in one batch, then the connection drops
			var seqs []int
			for s := from; s <= 3; s++ {
				seqs = append(seqs, s)
			}
			batch(seqs...)
		case 2: // 4..5, then complete although the job still runs
			for s := from; s <= 5; s++ {
				next(s)
			}
			fmt.Fprint(w, "event: complete\n\n")
		default:
			fmt.Fprint(w, "event: complete\n\n")
		}
	case strings.Contains(req.Query, "submitJob"):
		fmt.Fprint(w, `{"data":{"submitJob":{"id":"job_1"}}}`)
	case strings.Contains(req.Query, "node(id:"):
		st := f.states[0]
		if len(f.states) > 1 {
			f.states = f.states[1:]
		}
		fmt.Fprintf(w, `{"data":{"node":{"status":%q,"statusReason":"service main failed: exit status 7","services":[{"name":"main","status":%q,"statusReason":"","exitCode":7}]}}}`, st, st)
	default:
		http.Error(w, "unexpected", http.StatusBadRequest)
	}
}

func TestRunFollowsResumesAndExitsWithTheCode(t *testing.T) {
	f := &fakeAPI{states: []string{"RUNNING", "ERROR"}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"run", "--server", srv.URL, "--token", "lv9_x", "--", "sh", "-c", "exit 7"}, &stdout, &stderr)
	if code != 7 {
		t.Errorf("exit code %d, want 7; stderr: %s", code, stderr.String())
	}
	if got, want := stdout.String(), "line 1\nline 3\nline 4\nline 5\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	if !strings.Contains(stderr.String(), "line 2\n") {
		t.Errorf("stderr %q lacks the stderr line", stderr.String())
	}
	// Resumed after the last line each time: no gaps, no repeats.
	if want := []int{1, 4, 6}; !slices.Equal(f.froms, want) {
		t.Errorf("subscribed from %v, want %v", f.froms, want)
	}
}

func TestExitCodes(t *testing.T) {
	code := func(status string, exit *int) int {
		st := jobState{Status: status}
		st.Services = append(st.Services, struct {
			Name         string
			Status       string
			StatusReason string
			ExitCode     *int
		}{Name: "main", ExitCode: exit})
		return exitCodeOf(st, "job_1", &bytes.Buffer{})
	}
	three := 3
	for _, c := range []struct {
		status string
		exit   *int
		want   int
	}{{"COMPLETE", nil, 0}, {"ERROR", &three, 3}, {"ERROR", nil, 1}, {"CANCELLED", nil, 1}} {
		if got := code(c.status, c.exit); got != c.want {
			t.Errorf("%s with exit %v: %d, want %d", c.status, c.exit, got, c.want)
		}
	}
}

func TestLogsPrintsMarkedLines(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"data":{"jobLogs":[{"seq":1,"service":"web","stream":"stdout","text":"up"},{"seq":2,"service":"web","stream":"stderr","text":"oops"}]}}`)
	}))
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"logs", "--server", srv.URL, "--token", "lv9_x", "job_1"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if got, want := stdout.String(), "web | up\nweb ! oops\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestMountFlag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in       string
		bucket   string
		path     string
		readOnly bool
		ok       bool
	}{
		{"inputs:/data/in:ro", "inputs", "/data/in", true, true},
		{"outputs:/data/out", "outputs", "/data/out", false, true},
		{"bkt_01abc:/x", "bkt_01abc", "/x", false, true},
		{"inputs", "", "", false, false},
		{"inputs:data", "", "", false, false},
		{":/data", "", "", false, false},
		{"inputs:/data:rw", "", "", false, false},
		{"inputs:/a:b:ro", "", "", false, false},
	}
	for _, tc := range tests {
		var m mountFlags
		err := m.Set(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("Set(%q) = %v, want ok %v", tc.in, err, tc.ok)
			continue
		}
		if tc.ok && (m[0]["bucket"] != tc.bucket || m[0]["path"] != tc.path || m[0]["readOnly"] != tc.readOnly) {
			t.Errorf("Set(%q) = %v", tc.in, m[0])
		}
	}
}
