package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
)

// fnDir holds the functions tests' apps, from the e2e package directory.
const fnDir = "testdata/functions"

// fnTimeout bounds one script; it only catches hangs.
const fnTimeout = 10 * time.Minute

// Serverless functions on the built-in node's process runtime, through
// `levers9 run` as a user runs an app: one call, a map of 1,000 items in
// order, spawn and get, an exception whose remote traceback names the
// line that raised, a retry that succeeds, a timeout, a cancelled running
// call, a function calling another; a map read again by ID after its
// client was killed; and isolation between tenants and apps.
func TestFunctions(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		s, c := functionsServer(t, url, "process")
		env := fnEnv(t, s, c.Token)

		t.Run("entrypoint", func(t *testing.T) {
			t.Parallel()
			out := fnRunOK(t, env, nil, "app.py")
			checkApp(t, out, true)
		})
		t.Run("resume a map after the client is killed", func(t *testing.T) {
			t.Parallel()
			checkResume(t, env, nil)
		})
		t.Run("isolation", func(t *testing.T) {
			t.Parallel()
			checkIsolation(t, s, c, env)
		})
	})
}

// functionsServer starts a server whose built-in node runs runtime, with
// tokens granted to the admin, and waits for the node. It stops the server
// at the end of the test.
func functionsServer(t testing.TB, url, runtime string, env ...string) (*server, credentials) {
	t.Helper()
	s := startServer(t, shortTempDir(t), url, append([]string{"LEVERS9_LOCAL_NODE_RUNTIME=" + runtime}, env...)...)
	c := s.credentials()
	var me struct {
		Viewer struct{ User struct{ ID string } }
	}
	gql(t, s.URL, c.Token, `{ viewer { user { id } } }`, nil, &me)
	gql(t, s.URL, c.Token, `mutation($u: ID!) { grantTokens(input: {userID: $u, tokens: 100000, reason: "e2e"}) { id } }`,
		map[string]any{"u": me.Viewer.User.ID}, new(map[string]any))
	waitLocalNode(t, s.URL, c.Token)
	t.Cleanup(s.stop)
	return s, c
}

// shortTempDir is a temporary directory with a short path: the node keeps
// its containers' runner sockets under the data directory, and a socket's
// path has at most 107 bytes (t.TempDir() is named after the test).
func shortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "l9fn-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// checkApp matches the lines app.py's entrypoint printed. full: it ran
// every check (else only remote, map and error).
func checkApp(t *testing.T, out string, full bool) {
	t.Helper()
	got := fnLines(out)
	want := map[string]string{
		"remote": "49",
		"map":    "in order " + mapItems(full),
		"error":  "ValueError exception ValueError: bad input",
	}
	if full {
		want["spawn"] = "task 16"
		want["retry"] = "second attempt of k1"
		want["timeout"] = "FunctionTimeoutError timeout"
		want["cancel"] = "CallCancelledError after RUNNING"
		want["pipeline"] = "50"
	}
	for k, v := range want {
		if got[k] == nil || got[k][0] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
	// The remote traceback names the file and line that raised.
	line := markedLine(t, filepath.Join(fnDir, "app.py"), "E2E-REMOTE-LINE")
	wantFrame := regexp.MustCompile(`File ".*app\.py", line ` + fmt.Sprint(line) + `, in fail$`)
	found := false
	for _, l := range got["traceback"] {
		found = found || wantFrame.MatchString(l)
	}
	if !found {
		t.Errorf("the remote traceback does not name app.py line %d in fail:\n%s", line, strings.Join(got["traceback"], "\n"))
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

func mapItems(full bool) string {
	if full {
		return "1000"
	}
	return "100"
}

// checkResume starts mapper.py, kills it (SIGKILL, its whole process
// group) after a few results, then reads the map by its ID with a new
// client: every result arrives, in order, from the first item and from
// one in the middle.
func checkResume(t *testing.T, env, extra []string) {
	t.Helper()
	const n = 200
	ctx, cancel := context.WithTimeout(context.Background(), fnTimeout)
	defer cancel()
	cmd := fnCommand(ctx, t, env, extra, "mapper.py", "--n", fmt.Sprint(n))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	kill := func() {
		if !killed {
			killed = true
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	defer func() { kill(); _ = cmd.Wait() }()
	var mapID string
	results := 0
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		if m := regexp.MustCompile(`^map: (map_\S+)$`).FindStringSubmatch(line); m != nil {
			mapID = m[1]
		}
		if strings.HasPrefix(line, "result: ") {
			results++
		}
		if mapID != "" && results >= 3 {
			kill()
			break
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	_ = cmd.Wait()
	if mapID == "" || results < 3 {
		t.Fatalf("mapper.py ended before printing its map and 3 results (map %q, %d results); stderr:\n%s",
			mapID, results, stderr)
	}
	if results >= n {
		t.Fatalf("mapper.py printed all %d results before it was killed", results)
	}
	for _, start := range []string{"0", "150"} {
		out, err := fnPython(t, env, "resume.py", mapID, fmt.Sprint(n), start)
		want := fmt.Sprintf("resumed: in order %d from %s", n-atoi(t, start), start)
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("resume.py %s %d %s: %v; want %q in:\n%s", mapID, n, start, err, want, out)
		}
	}
}

// checkIsolation: the admin of another tenant cannot read, await or
// cancel a call or map of the first tenant, nor fetch its code or payload
// blobs knowing their hashes (NOT_FOUND; 404); a function of another app
// of the same tenant cannot read them through the runner API either.
func checkIsolation(t *testing.T, s *server, c credentials, env []string) {
	t.Helper()
	out := fnRunOK(t, env, nil, "iso.py", "victim")
	var v struct {
		OK                            bool
		Task, Map, Code, Args, Result string
	}
	if err := json.Unmarshal([]byte(lastJSONLine(out)), &v); err != nil || !v.OK || v.Result == "" {
		t.Fatalf("iso.py victim: %v, %+v; output:\n%s", err, v, out)
	}
	// The owner reaches all of it: the hashes are real.
	for _, h := range []string{v.Code, v.Args, v.Result} {
		if code := blobStatus(t, s.URL, c.Token, h); code != http.StatusOK {
			t.Errorf("the owner's GET /api/blobs/%s: %d, want 200", h, code)
		}
	}

	other := otherTenantAdmin(t, s, c)
	for _, q := range []struct{ name, query string }{
		{"awaitTask", `query($id: ID!) { awaitTask(id: $id) { id } }`},
		{"mapResults", `query($id: ID!) { mapResults(id: $id, from: 0) { map { id } } }`},
		{"cancelTask", `mutation($id: ID!) { cancelTask(id: $id) { id } }`},
		{"cancelMap", `mutation($id: ID!) { cancelMap(id: $id) { id } }`},
		{"node", `query($id: ID!) { node(id: $id) { id } }`},
	} {
		for _, id := range []string{v.Task, v.Map} {
			if q.name == "awaitTask" && id == v.Map || q.name == "mapResults" && id == v.Task ||
				q.name == "cancelTask" && id == v.Map || q.name == "cancelMap" && id == v.Task {
				continue
			}
			if q.name == "node" {
				var out struct{ Node *struct{ ID string } }
				body, _ := json.Marshal(map[string]any{"query": q.query, "variables": map[string]any{"id": id}})
				data, errs := send(t, s.URL+"/graphql", other, body)
				_ = json.Unmarshal(data, &out)
				if out.Node != nil || len(errs) > 0 && errCode(errs) != "NOT_FOUND" {
					t.Errorf("another tenant's node(%s): %+v, errors %+v", id, out.Node, errs)
				}
				continue
			}
			if errs := gqlErrors(t, s.URL, other, q.query, map[string]any{"id": id}); errCode(errs) != "NOT_FOUND" {
				t.Errorf("another tenant's %s(%s): errors %+v, want NOT_FOUND", q.name, id, errs)
			}
		}
	}
	for _, h := range []string{v.Code, v.Args, v.Result} {
		if code := blobStatus(t, s.URL, other, h); code != http.StatusNotFound {
			t.Errorf("another tenant's GET /api/blobs/%s: %d, want 404", h, code)
		}
	}
	// The calls were not touched by the attempts.
	var task struct{ AwaitTask struct{ State string } }
	gql(t, s.URL, c.Token, `query($id: ID!) { awaitTask(id: $id) { state } }`, map[string]any{"id": v.Task}, &task)
	if task.AwaitTask.State != "COMPLETE" {
		t.Errorf("the victim's call is %s after the other tenant's attempts, want COMPLETE", task.AwaitTask.State)
	}

	// A function of another app of the same tenant: its runner reaches
	// only its own app's calls.
	out = fnRunOK(t, env, nil, "iso.py", "peek", "--task", v.Task, "--map", v.Map)
	if got := fnLines(out)["peek"]; got == nil || got[0] != "task NOT_FOUND / map NOT_FOUND / cancel NOT_FOUND" {
		t.Errorf("peek from another app: %q, want every attempt NOT_FOUND; output:\n%s", got, out)
	}
}

// blobStatus is the status of GET /api/blobs/hash with token.
func blobStatus(t *testing.T, base, token, hash string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/api/blobs/"+hash, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func errCode(errs []gqlError) string {
	if len(errs) == 0 {
		return ""
	}
	code, _ := errs[0].Extensions["code"].(string)
	return code
}

// fnCommand is `levers9 run SCRIPT ARGS…` of the built binary for a
// script of fnDir (it runs python3 with the package it embeds), with the
// CLI's environment env plus extra.
func fnCommand(ctx context.Context, t testing.TB, env, extra []string, script string, args ...string) *exec.Cmd {
	t.Helper()
	path, err := filepath.Abs(filepath.Join(fnDir, script))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, binary, append([]string{"run", path}, args...)...)
	cmd.Env = append(append(cleanEnv(), env...), "PYTHONDONTWRITEBYTECODE=1", "XDG_CACHE_HOME="+t.TempDir())
	cmd.Env = append(cmd.Env, extra...)
	cmd.Dir = t.TempDir()
	return cmd
}

// fnRunOK runs a script with levers9 run and returns its output; it fails
// the test when the script fails.
func fnRunOK(t *testing.T, env, extra []string, script string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fnTimeout)
	defer cancel()
	out, err := fnCommand(ctx, t, env, extra, script, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("levers9 run %s %v: %v\n%s", script, args, err, out)
	}
	return string(out)
}

// fnPython runs a plain Python script of fnDir with the SDK importable.
func fnPython(t *testing.T, env []string, script string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fnTimeout)
	defer cancel()
	sdk, err := filepath.Abs(sdkDir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "python3", append([]string{filepath.Join(fnDir, script)}, args...)...)
	cmd.Env = append(append(cleanEnv(), env...), "PYTHONPATH="+sdk, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// fnLines collects "name: value" lines by name.
func fnLines(out string) map[string][]string {
	got := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if ok && regexp.MustCompile(`^[a-z0-9]+$`).MatchString(k) {
			got[k] = append(got[k], strings.TrimSpace(v))
		}
	}
	return got
}

// markedLine is the 1-based number of the line of path holding marker.
func markedLine(t *testing.T, path, marker string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, marker) {
			return i + 1
		}
	}
	t.Fatalf("no %s in %s", marker, path)
	return 0
}

func lastJSONLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "{") {
			return lines[i]
		}
	}
	return ""
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// fnEnv is the CLI's environment for token on s, with no config file.
func fnEnv(t testing.TB, s *server, token string) []string {
	return []string{"LEVERS9_SERVER=" + s.URL, "LEVERS9_TOKEN=" + token, "LEVERS9_CONFIG=" + t.TempDir() + "/none"}
}
