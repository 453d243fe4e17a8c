package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"
	"github.com/creack/pty"

	"github.com/levers9/levers9/internal/wire"
)

// fakeStreams plays the server for exec, attach and port-forward: job_1
// runs services sidecar (no terminal) and shell (a terminal); the streams
// speak the contract's frames.
type fakeStreams struct {
	mu        sync.Mutex
	opened    []string // path?query of each stream asked for
	tcpSeen   int
	submitted map[string]any // levers9 run's spec
	polls     int            // state queries of job_it
}

func newFakeStreams(t *testing.T) (*fakeStreams, string) {
	f := &fakeStreams{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /graphql", f.graphql)
	mux.HandleFunc("GET /streams/exec/{job}/{service}", f.exec)
	mux.HandleFunc("GET /streams/attach/{job}/{service}", f.attach)
	mux.HandleFunc("GET /streams/tcp/{job}/{service}/{port}", f.tcp)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *fakeStreams) graphql(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Query     string
		Variables map[string]any
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	switch {
	case strings.Contains(req.Query, "submitJob"):
		f.mu.Lock()
		f.submitted = req.Variables["s"].(map[string]any)
		f.mu.Unlock()
		fmt.Fprint(w, `{"data":{"submitJob":{"id":"job_it"}}}`)
		return
	case req.Variables["id"] == "job_it":
		// levers9 run -it's job: pending once, then running.
		f.mu.Lock()
		f.polls++
		status := "RUNNING"
		if f.polls == 1 {
			status = "PENDING"
		}
		f.mu.Unlock()
		fmt.Fprintf(w, `{"data":{"node":{"attempt":1,"status":%q,"statusReason":"","services":[{"name":"main","status":%[1]q}]}}}`, status)
		return
	}
	if req.Variables["id"] != "job_1" {
		fmt.Fprint(w, `{"data":{"node":null}}`)
		return
	}
	fmt.Fprint(w, `{"data":{"node":{"id":"job_1","status":"RUNNING","services":[{"name":"sidecar","status":"RUNNING"},{"name":"shell","status":"RUNNING"}]}}}`)
}

// refused answers as the relay refuses before the upgrade.
func refused(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"code": code, "error": msg})
}

func (f *fakeStreams) record(r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opened = append(f.opened, r.URL.Path+"?"+r.URL.RawQuery)
}

func (f *fakeStreams) streams() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.opened)
}

// exec prints the command it was given and exits with 3; the job
// job_forbidden is refused.
func (f *fakeStreams) exec(w http.ResponseWriter, r *http.Request) {
	f.record(r)
	if r.Header.Get("Authorization") != "Bearer lv9_x" {
		refused(w, http.StatusUnauthorized, "UNAUTHENTICATED", "no token")
		return
	}
	if r.PathValue("service") == "sidecar" && r.URL.Query().Get("tty") == "1" {
		refused(w, http.StatusForbidden, "FORBIDDEN", "terminals are for the job's owner")
		return
	}
	conn := acceptFrames(w, r)
	if conn == nil {
		return
	}
	defer conn.Close()
	_ = wire.WriteFrame(conn, wire.FrameStdout, []byte("ran "+strings.Join(r.URL.Query()["cmd"], " ")+"\n"))
	_ = wire.WriteFrame(conn, wire.FrameStderr, []byte("on "+r.PathValue("service")+"\n"))
	_ = wire.WriteFrame(conn, wire.FrameExit, wire.ExitPayload(3))
}

// attach refuses sidecar (no terminal); on the others it prints a
// prompt, echoes the input until its end or Ctrl-D, then exits with 5.
func (f *fakeStreams) attach(w http.ResponseWriter, r *http.Request) {
	f.record(r)
	if r.PathValue("service") == "sidecar" {
		refused(w, http.StatusBadRequest, "BAD_USER_INPUT", "the service was not started with a terminal (tty)")
		return
	}
	conn := acceptFrames(w, r)
	if conn == nil {
		return
	}
	defer conn.Close()
	_ = wire.WriteFrame(conn, wire.FrameStdout, []byte("$ "))
	for {
		typ, p, err := wire.ReadFrame(conn, nil)
		if err != nil {
			return
		}
		switch typ {
		case wire.FrameStdin:
			_ = wire.WriteFrame(conn, wire.FrameStdout, p)
			if bytes.IndexByte(p, 4) >= 0 {
				_ = wire.WriteFrame(conn, wire.FrameExit, wire.ExitPayload(5))
				return
			}
		case wire.FrameCloseStdin:
			_ = wire.WriteFrame(conn, wire.FrameExit, wire.ExitPayload(5))
			return
		}
	}
}

// acceptFrames upgrades to a byte stream.
func acceptFrames(w http.ResponseWriter, r *http.Request) io.ReadWriteCloser {
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return nil
	}
	return websocket.NetConn(r.Context(), ws, websocket.MessageBinary)
}

// runWithStdin runs a command line with stdin as its input.
func runWithStdin(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	root := newRootCommand(&app{stdin: strings.NewReader(stdin), stdout: &stdout, stderr: &stderr})
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(t.Context())
	return exitCodeOfRun(cmd, err, &stderr), stdout.String(), stderr.String()
}

func TestExecArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args    []string
		dash    int
		job     string
		command []string
	}{
		{[]string{"job_1", "sh", "-c", "exit 3"}, 1, "job_1", []string{"sh", "-c", "exit 3"}},
		{[]string{"job_1", "nvidia-smi"}, -1, "job_1", []string{"nvidia-smi"}},
		{[]string{"job_1", "echo", "--", "x"}, 1, "job_1", []string{"echo", "--", "x"}},
		{[]string{"job_1"}, -1, "", nil},
		{[]string{"job_1"}, 1, "", nil},
		{[]string{"sh", "-c"}, 0, "", nil},
		{[]string{"job_1", "x", "y"}, 2, "", nil},
	} {
		job, command, ok := execArgs(tc.args, tc.dash)
		if job != tc.job || !slices.Equal(command, tc.command) || ok != (tc.job != "") {
			t.Errorf("execArgs(%q, %d) = %q, %q, %v; want %q, %q", tc.args, tc.dash, job, command, ok, tc.job, tc.command)
		}
	}
}

// levers9 exec runs the command in the job's first service (or
// --service), prints its output and exits with its exit code; refusals
// are said with the server's code and exit 1.
func TestExecThroughTheServer(t *testing.T) {
	t.Parallel()
	f, srv := newFakeStreams(t)
	conn := []string{"--server", srv, "--token", "lv9_x"}
	code, stdout, stderr := runWithStdin(t, "", append([]string{"exec", "job_1"}, append(conn, "--", "sh", "-c", "exit 3")...)...)
	if code != 3 || stdout != "ran sh -c exit 3\n" || stderr != "on sidecar\n" {
		t.Errorf("exec: exit %d, stdout %q, stderr %q; want 3 and the command's output", code, stdout, stderr)
	}
	want := "/streams/exec/job_1/sidecar?" + url.Values{"cmd": {"sh", "-c", "exit 3"}}.Encode()
	if got := f.streams(); len(got) != 1 || got[0] != want {
		t.Errorf("streams %q, want %q", got, want)
	}

	code, _, stderr = runWithStdin(t, "", append([]string{"exec", "job_1", "--service", "shell"}, append(conn, "--", "true")...)...)
	if code != 3 || stderr != "on shell\n" {
		t.Errorf("exec --service shell: exit %d, stderr %q", code, stderr)
	}

	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"exec", "job_2", "--", "true"}, exitError, "NOT_FOUND: job job_2 not found"},
		{[]string{"exec", "job_1", "--service", "db", "--", "true"}, exitError, `NOT_FOUND: the job has no service "db" (its services: sidecar, shell)`},
		{[]string{"exec", "-t", "job_1", "--", "top"}, exitError, "FORBIDDEN: terminals are for the job's owner"},
		{[]string{"exec", "-it", "job_1", "--", "bash"}, exitUsage, "the input device is not a TTY"},
		{[]string{"exec", "job_1"}, exitUsage, "Usage: levers9 exec"},
	} {
		code, _, stderr := runWithStdin(t, "", append(slices.Clone(conn), tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.says) {
			t.Errorf("%q: exit %d, stderr %q; want %d saying %q", tc.args, code, stderr, tc.code, tc.says)
		}
	}
	if got := f.streams(); len(got) != 3 {
		t.Errorf("%d streams opened, want 3 (-it without a terminal opens none): %q", len(got), got)
	}
}

// levers9 attach finds the service with a terminal (the server refuses
// the others), sends the input and exits with the service's code.
func TestAttachChoosesTheServiceWithATerminal(t *testing.T) {
	t.Parallel()
	f, srv := newFakeStreams(t)
	code, stdout, stderr := runWithStdin(t, "ls\n", "attach", "job_1", "--server", srv, "--token", "lv9_x")
	if code != 5 || stdout != "$ ls\n" {
		t.Errorf("attach: exit %d, stdout %q, stderr %q; want 5 and the echo", code, stdout, stderr)
	}
	got := f.streams()
	want := []string{"/streams/attach/job_1/sidecar?cols=80&rows=24", "/streams/attach/job_1/shell?cols=80&rows=24"}
	if !slices.Equal(got, want) {
		t.Errorf("streams %q, want %q", got, want)
	}
	code, _, stderr = runWithStdin(t, "", "attach", "job_1", "--service", "sidecar", "--server", srv, "--token", "lv9_x")
	if code != exitError || !strings.Contains(stderr, "BAD_USER_INPUT: the service was not started with a terminal") {
		t.Errorf("attach --service sidecar: exit %d, stderr %q", code, stderr)
	}
}

// run -t is for interactive jobs on a terminal: refused before anything
// is submitted otherwise.
func TestRunTTYNeedsInteractiveAndATerminal(t *testing.T) {
	t.Parallel()
	api := &recordingAPI{}
	srv := httptest.NewServer(api)
	defer srv.Close()
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"run", "-t", "--", "bash"}, "-t needs -i"},
		{[]string{"run", "-it", "--", "bash"}, "the input device is not a TTY"},
		{[]string{"run", "-i", "-t", "--", "bash"}, "the input device is not a TTY"},
	} {
		code, _, stderr := runWithStdin(t, "", append(tc.args, "--server", srv.URL, "--token", "lv9_x")...)
		if code != exitUsage || !strings.Contains(stderr, tc.says) {
			t.Errorf("%q: exit %d, stderr %q; want %d saying %q", tc.args, code, stderr, exitUsage, tc.says)
		}
	}
	api.mu.Lock()
	if len(api.requests) != 0 {
		t.Errorf("%d requests reached the server", len(api.requests))
	}
	api.mu.Unlock()
	// Detached, a terminal is not needed here: the job is submitted with
	// a tty for a later levers9 attach.
	code, stdout, stderr := runWithStdin(t, "", "submit", "-it", "--server", srv.URL, "--token", "lv9_x", "--", "bash")
	if code != exitOK || stdout != "job_1\n" {
		t.Fatalf("submit -it: exit %d, %q, %q", code, stdout, stderr)
	}
	spec := api.last(t).Variables["s"].(map[string]any)
	svc := spec["services"].([]any)[0].(map[string]any)
	if spec["interactive"] != true || svc["tty"] != true {
		t.Errorf("submitted %v, want interactive with a tty service", spec)
	}
}

// levers9 run -it submits an interactive job with a tty service, waits
// for it to run, attaches this terminal to it and exits with its code.
func TestRunITAttaches(t *testing.T) {
	t.Parallel()
	ptm, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptm.Close()
	defer tty.Close()
	f, srv := newFakeStreams(t)
	var stderr syncBuffer
	stdout := &promptWatch{prompted: make(chan struct{})}
	root := newRootCommand(&app{stdin: tty, stdout: stdout, stderr: &stderr})
	root.SetArgs([]string{"run", "-it", "--server", srv, "--token", "lv9_x", "--", "bash"})
	done := make(chan int, 1)
	go func() {
		cmd, err := root.ExecuteContextC(t.Context())
		done <- exitCodeOfRun(cmd, err, &stderr)
	}()
	// Typed once attached (the terminal is raw then), so that Ctrl-D is
	// a byte rather than the end of a line.
	select {
	case <-stdout.prompted:
	case code := <-done:
		t.Fatalf("exit %d before the prompt; stderr %q", code, stderr.String())
	}
	if _, err := ptm.Write([]byte("ls\r\x04")); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != 5 {
		t.Fatalf("exit %d, want 5; stderr %q", code, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "$ ls\r") {
		t.Errorf("stdout %q, want the prompt and the echo", stdout.String())
	}
	if !strings.Contains(stderr.String(), "job job_it submitted") || !strings.Contains(stderr.String(), "waiting for job job_it to start") {
		t.Errorf("stderr %q, want the job ID and the wait said", stderr.String())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	svc := f.submitted["services"].([]any)[0].(map[string]any)
	if f.submitted["interactive"] != true || svc["tty"] != true || svc["name"] != "main" {
		t.Errorf("submitted %v, want an interactive job whose service has a tty", f.submitted)
	}
	if got := f.opened; len(got) != 1 || !strings.HasPrefix(got[0], "/streams/attach/job_it/main?") {
		t.Errorf("streams %q, want one attach to main", got)
	}
}

// promptWatch is the output of an attach: prompted is closed once the
// prompt came.
type promptWatch struct {
	syncBuffer
	once     sync.Once
	prompted chan struct{}
}

func (p *promptWatch) Write(b []byte) (int, error) {
	n, err := p.syncBuffer.Write(b)
	if strings.Contains(p.String(), "$ ") {
		p.once.Do(func() { close(p.prompted) })
	}
	return n, err
}
