package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The connection flags go before or after every new command, and a
// server URL without a scheme reaches the same server (http:// for
// 127.0.0.1).
func TestToolCommandsTakeGlobalFlagsAnywhere(t *testing.T) {
	t.Setenv("LEVERS9_CONFIG", t.TempDir()+"/none")
	t.Setenv("LEVERS9_SERVER", "")
	t.Setenv("LEVERS9_TOKEN", "")
	api := &recordingAPI{}
	srv := httptest.NewServer(api)
	defer srv.Close()
	bare := strings.TrimPrefix(srv.URL, "http://")
	for i, cmd := range [][]string{
		{"buckets"}, {"buckets", "list"}, {"queue"}, {"queue", "-o", "wide"}, {"top"},
		{"jobs", "-o", "wide"}, {"ls", "data"}, {"ls", "--json", "data:x/"},
	} {
		for _, server := range []string{srv.URL, bare} {
			tok := fmt.Sprintf("lv9_tok%d", i)
			global := []string{"--server", server, "--token", tok}
			for _, args := range [][]string{append(append([]string{}, global...), cmd...), append(append([]string{}, cmd...), global...)} {
				code, _, stderr := runCLI(t, args...)
				if code != exitOK {
					t.Errorf("%q: exit %d, %s", args, code, stderr)
				}
				if got := api.last(t).Token; got != tok {
					t.Errorf("%q: the server saw token %q, want %q", args, got, tok)
				}
			}
		}
	}
}

// Bad usage of the new commands and flags exits 2 saying what is wrong,
// before anything is sent.
func TestToolCommandsBadUsage(t *testing.T) {
	t.Setenv("LEVERS9_CONFIG", t.TempDir()+"/none")
	api := &recordingAPI{}
	srv := httptest.NewServer(api)
	defer srv.Close()
	conn := []string{"--server", srv.URL, "--token", "lv9_x"}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"jobs", "-o", "yaml"}, "-o takes only wide"},
		{[]string{"jobs", "--watch", "--json"}, "--watch prints no JSON"},
		{[]string{"queue", "frob"}, "levers9 queue requeue"},
		{[]string{"queue", "-o", "json"}, "usage: levers9 queue"},
		{[]string{"top", "-w", "--json"}, "--watch prints no JSON"},
		{[]string{"buckets", "frob"}, `unknown subcommand "frob"`},
		{[]string{"buckets", "create"}, "levers9 buckets create NAME"},
		{[]string{"buckets", "delete"}, "levers9 buckets delete NAME"},
		{[]string{"cp", "-", "data:"}, "standard input is one file"},
		{[]string{"cp", "-", "data:dir/"}, "standard input is one file"},
		{[]string{"cp", "-r", "-", "data:x"}, "standard input is one file"},
		{[]string{"cp", "data:", "-"}, "standard output takes one file"},
		{[]string{"cp", "-r", "data:x", "-"}, "standard output takes one file"},
		{[]string{"cp", "-", "-"}, "exactly one side is BUCKET:KEY"},
		{[]string{"rm", "--json", "data:x"}, "prints no JSON"},
	} {
		api.requests = nil
		code, _, stderr := runCLI(t, append(tc.args, conn...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.says) {
			t.Errorf("%q: exit %d, %q; want 2 saying %q", tc.args, code, stderr, tc.says)
		}
		if len(api.requests) != 0 {
			t.Errorf("%q: sent %d requests, want none", tc.args, len(api.requests))
		}
	}
	for _, server := range []string{"ftp://example.com", "http://", "example.com?x=1"} {
		code, _, stderr := runCLI(t, "jobs", "--server", server, "--token", "lv9_x")
		if code != exitUsage || !strings.Contains(stderr, "want a URL such as") {
			t.Errorf("--server %q: exit %d, %q; want 2 saying what a server URL is", server, code, stderr)
		}
	}
}

func testJob(id, name, status, reason string, created time.Time, gpus ...int) jobRow {
	j := jobRow{ID: id, Name: name, Status: status, StatusReason: reason, CreatedAt: created}
	j.Queue.Name = "gpu"
	j.Owner.Email = "ada@example.com"
	for i, n := range gpus {
		s := serviceRow{Name: fmt.Sprint("s", i), Gpus: n, GpuType: "H100", CPU: 2, MemoryMib: 1024}
		s.Node = &struct {
			Name string `json:"name"`
		}{"gpu-1"}
		j.Services = append(j.Services, s)
	}
	return j
}

// -o wide and levers9 queue show who, where, how many GPUs and why a job
// waits, in columns that line up.
func TestJobTables(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	jobs := []jobRow{
		testJob("job_1", "train", "PENDING", "waiting for free capacity in queue gpu", now.Add(-5*time.Minute-10*time.Second), 2, 1),
		testJob("job_2", "", "PENDING", "", now.Add(-30*time.Second)),
	}
	for _, tc := range []struct {
		name  string
		print func(io.Writer) error
		want  []string
	}{
		{"jobs", func(w io.Writer) error { return printJobs(w, jobs, false) }, []string{
			"ID     NAME   STATUS   QUEUE  CREATED", "REASON"}},
		{"jobs -o wide", func(w io.Writer) error { return printJobs(w, jobs, true) }, []string{
			"OWNER", "NODE", "GPUS", "ada@example.com  gpu-1  3 H100", "waiting for free capacity in queue gpu"}},
		{"queue", func(w io.Writer) error { return printPending(w, jobs, false, now) }, []string{
			"ID     NAME   QUEUE  OWNER            GPUS    WAITING  REASON",
			"job_1  train  gpu    ada@example.com  3 H100  5m10s    waiting for free capacity in queue gpu",
			"job_2  -      gpu    ada@example.com  -       30s      -"}},
		{"queue -o wide", func(w io.Writer) error { return printPending(w, jobs, true, now) }, []string{
			"PROJECT", "CPUS", "MEMORY", "3 H100  4     2048 MiB  5m10s"}},
	} {
		var buf bytes.Buffer
		if err := tc.print(&buf); err != nil {
			t.Fatal(err)
		}
		for _, want := range tc.want {
			if !strings.Contains(buf.String(), want) {
				t.Errorf("%s lacks %q:\n%s", tc.name, want, buf.String())
			}
		}
	}
	for d, want := range map[time.Duration]string{
		-time.Second: "0s", 42 * time.Second: "42s", 5*time.Minute + 10*time.Second: "5m10s",
		3*time.Hour + 5*time.Minute + 59*time.Second: "3h05m", 52 * time.Hour: "2d04h",
	} {
		if got := formatWait(d); got != want {
			t.Errorf("formatWait(%v) = %q, want %q", d, got, want)
		}
	}
}

// A watched table is drawn again only when it changed, outlives a failed
// read, and Ctrl-C (the context ending) exits 0.
func TestWatchTableRedrawsOnChange(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	reads := []struct {
		rows []string
		err  error
	}{{[]string{"a"}, nil}, {[]string{"a"}, nil}, {nil, fmt.Errorf("server down")}, {[]string{"a", "b"}, nil}, {[]string{"a", "b"}, nil}}
	n := 0
	list := func(context.Context) ([]string, error) {
		r := reads[min(n, len(reads)-1)]
		if n++; n >= len(reads) {
			cancel()
		}
		return r.rows, r.err
	}
	draw := func(w io.Writer, rows []string) error { _, err := fmt.Fprintln(w, strings.Join(rows, ",")); return err }
	var stdout, stderr bytes.Buffer
	done := make(chan int)
	go func() {
		done <- watchTableEvery(ctx, "levers9 test", list, draw, false, &stdout, &stderr, time.Millisecond)
	}()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d after Ctrl-C, want 0", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not end with its context")
	}
	if got := stdout.String(); got != "a\n\na,b\n" {
		t.Errorf("drawn %q, want the table once per change", got)
	}
	if !strings.Contains(stderr.String(), "server down (retrying)") {
		t.Errorf("stderr %q does not say the failed read", stderr.String())
	}
}
