package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/dockertest"
)

// bpDir holds the blueprint, sandbox and box scripts, from the e2e
// package directory.
const bpDir = "testdata/blueprints"

// Sandboxes in real containers, driven by the Python SDK as users drive
// them (testdata/blueprints/sandbox.py): a blueprint built from the
// Debian python3 image, a sandbox of it; an exec's first line arrives
// while the process still runs (it waits for a file that the script
// writes only after reading that line, so a client that got output only
// at the end would never see it end); stdout and stderr apart with the
// exit code; a 1 MiB file with NUL bytes written and read back; a
// missing file is FileNotFoundError; several execs at once, each with
// its own stdin; a port through the relay; a snapshot whose files a new
// sandbox sees. Then the job's exec history (GraphQL) lists what ran,
// with exit codes.
func TestSandboxDocker(t *testing.T) {
	t.Parallel()
	image := dockertest.Python(t)
	s, c := functionsServer(t, dbtest.SQLiteURL(t), "docker")
	out, err := bpPython(t, fnEnv(t, s, c.Token), []string{"E2E_IMAGE=" + image}, "sandbox.py")
	got := fnLines(out)
	if err != nil {
		for _, id := range got["sandbox"] {
			logJob(t, s.URL, c.Token, id)
		}
		t.Fatalf("sandbox.py: %v\n%s", err, out)
	}
	want := map[string]string{
		"stream":     "a while running",
		"streamrest": "b exit 0",
		"split":      "out / err / 3",
		"files":      "1048576 bytes equal",
		"missing":    "FileNotFoundError",
		"concurrent": "4 of 4 echoed their own stdin",
		"tunnel":     "200 hello through the relay",
		"snapread":   "kept",
	}
	for k, v := range want {
		if g := got[k]; g == nil || g[0] != v {
			t.Errorf("%s: got %q, want %q", k, g, v)
		}
	}
	if t.Failed() {
		t.Logf("sandbox.py:\n%s", out)
	}
	if len(got["sandbox"]) != 2 || len(got["snapshotid"]) != 1 {
		t.Fatalf("sandbox.py printed no sandbox or snapshot IDs:\n%s", out)
	}
	// The snapshot is a blueprint of its own, made from the sandbox's job.
	snap := blueprintByID(t, s.URL, c.Token, got["snapshotid"][0])
	removeBlueprintImagesAfter(t, snap.Image)
	if snap.State != "READY" || snap.Source != "SNAPSHOT" || snap.BuildJobID != got["sandbox"][0] || snap.ExportBytes <= 0 {
		t.Errorf("the snapshot: %+v; want READY, SNAPSHOT, of job %s, exported", snap, got["sandbox"][0])
	}
	// terminate() cancels the jobs.
	for _, id := range got["sandbox"] {
		waitUntil(t, "sandbox "+id+" cancelled", stopTimeout, func() bool {
			return sandboxJob(t, s.URL, c.Token, id).Status == "CANCELLED"
		})
	}

	// The exec history: every command run through the relay, with its
	// exit code once it ended.
	var job struct {
		Node struct {
			Kind       string
			Executions []struct {
				Service  string
				Command  []string
				ExitCode *int
				EndedAt  *time.Time
				User     *struct{ Email string }
			}
		}
	}
	gql(t, s.URL, c.Token, `query($id: ID!) { node(id: $id) { ... on Job { kind executions(last: 100) {
		service command exitCode endedAt user { email } } } } }`, map[string]any{"id": got["sandbox"][0]}, &job)
	if job.Node.Kind != "SANDBOX" {
		t.Errorf("the sandbox's job is of kind %q, want SANDBOX", job.Node.Kind)
	}
	found := false
	for _, e := range job.Node.Executions {
		if strings.Contains(strings.Join(e.Command, " "), "echo err >&2; exit 3") {
			found = true
			if e.Service != "sandbox" || e.ExitCode == nil || *e.ExitCode != 3 || e.EndedAt == nil ||
				e.User == nil || e.User.Email != c.AdminEmail {
				t.Errorf("the exec history's exit 3: %+v; want service sandbox, exit 3, ended, by %s", e, c.AdminEmail)
			}
		}
	}
	if !found || len(job.Node.Executions) < 8 {
		t.Errorf("the exec history has %d entries and the exit 3 one: %v; want at least 8 (every exec and file call)",
			len(job.Node.Executions), found)
	}
}

// bpPython runs a Python script of bpDir with the SDK importable, the
// CLI's environment env and extra variables.
func bpPython(t testing.TB, env, extra []string, script string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fnTimeout)
	defer cancel()
	sdk, err := filepath.Abs(sdkDir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "python3", append([]string{"-u", filepath.Join(bpDir, script)}, args...)...)
	cmd.Env = append(append(append(cleanEnv(), env...), extra...), "PYTHONPATH="+sdk, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// createSandbox submits a sandbox (SandboxInput as a map) and returns its
// job's ID.
func createSandbox(t testing.TB, base, token string, in map[string]any) string {
	t.Helper()
	var out struct{ CreateSandbox struct{ ID string } }
	gql(t, base, token, `mutation($in: SandboxInput!) { createSandbox(input: $in) { id } }`, map[string]any{"in": in}, &out)
	return out.CreateSandbox.ID
}

// sandboxState is a sandbox job as GraphQL shows it.
type sandboxState struct {
	Status, StatusReason, Kind string
	Services                   []struct {
		Name, Status string
		Node         *struct{ ID, Name string }
	}
}

func sandboxJob(t testing.TB, base, token, id string) sandboxState {
	t.Helper()
	var out struct{ Node sandboxState }
	gql(t, base, token, `query($id: ID!) { node(id: $id) { ... on Job { status statusReason kind
		services { name status node { id name } } } } }`, map[string]any{"id": id}, &out)
	return out.Node
}

// awaitSandbox waits until sandbox job id runs and returns it; the test
// fails when the job ends first.
func awaitSandbox(t testing.TB, base, token, id string) sandboxState {
	t.Helper()
	deadline := time.Now().Add(fnTimeout)
	for {
		j := sandboxJob(t, base, token, id)
		switch {
		case j.Status == "RUNNING" && len(j.Services) == 1 && j.Services[0].Status == "RUNNING":
			return j
		case j.Status != "PENDING" && j.Status != "RUNNING":
			logJob(t, base, token, id)
			t.Fatalf("sandbox %s ended before it ran: %+v", id, j)
		case time.Now().After(deadline):
			t.Fatalf("sandbox %s not running after %v: %+v", id, fnTimeout, j)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// terminate cancels a job (a sandbox's end).
func terminate(t testing.TB, base, token, id string) {
	t.Helper()
	gqlSoft(t, base, token, `mutation($id: ID!) { cancelJob(id: $id) { id } }`, map[string]any{"id": id}, new(map[string]any))
}

// logJob logs a job's stored output (why a build or a sandbox failed).
func logJob(t testing.TB, base, token, id string) {
	t.Helper()
	var logs struct {
		JobLogs []struct{ Service, Text string }
	}
	gqlSoft(t, base, token, `query($j: ID!) { jobLogs(jobId: $j, first: 300) { service text } }`, map[string]any{"j": id}, &logs)
	var lines []string
	for _, l := range logs.JobLogs {
		lines = append(lines, l.Service+" | "+l.Text)
	}
	j := sandboxJob(t, base, token, id)
	t.Logf("job %s (%+v):\n%s", id, j, strings.Join(lines, "\n"))
}

// execResult is one command run through the relay's exec stream.
type execResult struct {
	Stdout, Stderr string
	Exit           int    // -1: no exit frame
	Error          string // an error frame's text
	// FirstOutput is how long after the dial began the first byte of
	// output (stdout or stderr) arrived; 0: none.
	FirstOutput time.Duration
}

// errStatus is a refused exec handshake.
type errStatus struct {
	Status int
	Body   string
}

func (e *errStatus) Error() string { return fmt.Sprintf("status %d: %s", e.Status, e.Body) }

// execURL is the relay's exec stream of a job's service for cmd.
func execURL(base, job, service string, cmd []string) string {
	q := url.Values{"cmd": cmd}
	return "ws" + strings.TrimPrefix(base, "http") + "/streams/exec/" + job + "/" + service + "?" + q.Encode()
}

// sandboxExec runs cmd in sandbox job's service "sandbox" through the
// relay (GET /streams/exec, terminal frames over a WebSocket), sends
// stdin and closes it, and collects the output until the exit frame. A
// refused handshake is an *errStatus.
func sandboxExec(ctx context.Context, base, token, job string, stdin []byte, cmd ...string) (execResult, error) {
	res := execResult{Exit: -1}
	start := time.Now()
	ws, resp, err := websocket.Dial(ctx, execURL(base, job, "sandbox", cmd),
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		if resp != nil {
			var body []byte
			if resp.Body != nil {
				body, _ = io.ReadAll(resp.Body)
			}
			return res, &errStatus{Status: resp.StatusCode, Body: string(body)}
		}
		return res, err
	}
	defer ws.CloseNow()
	ws.SetReadLimit(4 << 20)
	nc := websocket.NetConn(ctx, ws, websocket.MessageBinary)
	wrote := make(chan error, 1)
	go func() {
		for rest := stdin; len(rest) > 0; {
			n := min(len(rest), maxFramePayload)
			if err := writeFrame(nc, frameStdin, rest[:n]); err != nil {
				wrote <- err
				return
			}
			rest = rest[n:]
		}
		wrote <- writeFrame(nc, frameCloseStdin, nil)
	}()
	var stdout, stderr bytes.Buffer
	buf := make([]byte, maxFramePayload)
	for {
		typ, p, err := readFrame(nc, buf)
		if err != nil {
			return res, fmt.Errorf("exec %v: reading frames: %w (stdout %q, stderr %q)", cmd, err, stdout.String(), stderr.String())
		}
		switch typ {
		case frameStdout, frameStderr:
			if res.FirstOutput == 0 && len(p) > 0 {
				res.FirstOutput = time.Since(start)
			}
			if typ == frameStdout {
				stdout.Write(p)
			} else {
				stderr.Write(p)
			}
		case frameExit:
			if res.Exit, err = parseExit(p); err != nil {
				return res, err
			}
		case frameError:
			res.Error = string(p)
		}
		if typ == frameExit || typ == frameError {
			break
		}
	}
	res.Stdout, res.Stderr = stdout.String(), stderr.String()
	select {
	case err := <-wrote:
		if err != nil && res.Exit < 0 {
			return res, fmt.Errorf("exec %v: writing stdin: %w", cmd, err)
		}
	default: // the command ended without reading its input
	}
	_ = ws.Close(websocket.StatusNormalClosure, "")
	return res, nil
}

// execOK runs cmd in a running sandbox and fails the test unless it
// exits 0; it returns stdout.
func execOK(t testing.TB, base, token, job string, cmd ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fnTimeout)
	defer cancel()
	r, err := sandboxExec(ctx, base, token, job, nil, cmd...)
	if err != nil || r.Exit != 0 {
		logJob(t, base, token, job)
		t.Fatalf("exec %q in sandbox %s: %v, %+v; want exit 0", cmd, job, err, r)
	}
	return r.Stdout
}

// refusedStatus is the HTTP status of a refused handshake (0: accepted or
// another error).
func refusedStatus(err error) int {
	var e *errStatus
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// refusalCode is the code of a JSON refusal body.
func refusalCode(body string) string {
	var r struct{ Code string }
	_ = json.Unmarshal([]byte(body), &r)
	return r.Code
}
