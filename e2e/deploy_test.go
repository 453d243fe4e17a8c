package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
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

	"github.com/coder/websocket"

	"github.com/levers9/levers9/internal/dbtest"
)

// depDir holds the deployment tests' apps, from the e2e package directory.
const depDir = "testdata/deploy"

// Deployments on the built-in node's process runtime, through the real
// binary as users ship apps: `levers9 deploy` of two versions (both
// answer, the alias follows the latest, a rollback and a stopped
// version), an endpoint call longer than its sync limit (202, then the
// result), task-queue retries, a dead letter and its requeue, idempotency
// keys, secrets reaching only the functions naming them and no log or
// API response, calls refused across tenants, a public endpoint,
// `levers9 serve` redeploying a saved file, and a WebSocket echo.
func TestDeploy(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		s, c := functionsServer(t, url, "process")
		d := newDeployer(t, s, c.Token)
		t.Run("versions", func(t *testing.T) {
			t.Parallel()
			checkVersions(t, d, false)
		})
		t.Run("long call", func(t *testing.T) {
			t.Parallel()
			checkLongCall(t, d)
		})
		t.Run("task queue", func(t *testing.T) {
			t.Parallel()
			checkQueue(t, d)
		})
		t.Run("secrets", func(t *testing.T) {
			t.Parallel()
			checkSecrets(t, d)
		})
		t.Run("cross-tenant", func(t *testing.T) {
			t.Parallel()
			checkCrossTenant(t, d, c)
		})
		t.Run("serve", func(t *testing.T) {
			t.Parallel()
			checkServe(t, d)
		})
		t.Run("realtime", func(t *testing.T) {
			t.Parallel()
			checkRealtime(t, d)
		})
	})
}

// deployer reaches one server as one user: its CLI environment, its token,
// and extra variables for the scripts (E2E_IMAGE on Docker).
type deployer struct {
	s     *server
	token string
	env   []string
	extra []string
}

func newDeployer(t testing.TB, s *server, token string, extra ...string) *deployer {
	return &deployer{s: s, token: token, env: fnEnv(t, s, token), extra: extra}
}

// as is the same server reached with another token.
func (d *deployer) as(t testing.TB, token string) *deployer {
	return &deployer{s: d.s, token: token, env: fnEnv(t, d.s, token), extra: d.extra}
}

// depCopy copies apps of depDir into a new directory, the project folder
// a deploy packs (so that each app ships only its own file, and a test
// may rewrite it).
func depCopy(t testing.TB, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(depDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// rewriteMarked replaces the line of path holding marker with line.
func rewriteMarked(t testing.TB, path, marker, line string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	found := false
	for i, l := range lines {
		if strings.Contains(l, marker) {
			lines[i], found = line+"  # "+marker, true
		}
	}
	if !found {
		t.Fatalf("no %s in %s", marker, path)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// command is the binary with args, run in dir, with the deployer's CLI
// environment; bounded by ctx.
func (d *deployer) command(ctx context.Context, t testing.TB, dir string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(append(cleanEnv(), d.env...), "PYTHONDONTWRITEBYTECODE=1", "XDG_CACHE_HOME="+t.TempDir())
	cmd.Env = append(cmd.Env, d.extra...)
	cmd.Dir = dir
	return cmd
}

// cli runs the binary with args and returns its combined output and exit
// code.
func (d *deployer) cli(t testing.TB, dir string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fnTimeout)
	defer cancel()
	if dir == "" {
		dir = t.TempDir()
	}
	out, err := d.command(ctx, t, dir, args...).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	t.Fatalf("levers9 %v: %v\n%s", args, err, out)
	return "", -1
}

// cliOK is cli failing the test on a non-zero exit.
func (d *deployer) cliOK(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, code := d.cli(t, dir, args...)
	if code != 0 {
		t.Fatalf("levers9 %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// deploy runs `levers9 deploy SCRIPT` in dir.
func (d *deployer) deploy(t testing.TB, dir, script string) string {
	t.Helper()
	return d.cliOK(t, dir, "deploy", filepath.Join(dir, script))
}

// lookup runs lookup.py (a plain Python script with the SDK importable)
// and returns its "name: value" lines.
func (d *deployer) lookup(t testing.TB, args ...string) map[string][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fnTimeout)
	defer cancel()
	sdk, err := filepath.Abs(sdkDir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "python3", append([]string{filepath.Join(depDir, "lookup.py")}, args...)...)
	cmd.Env = append(append(append(cleanEnv(), d.env...), d.extra...), "PYTHONPATH="+sdk, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("lookup.py %v: %v\n%s", args, err, out)
	}
	got := fnLines(string(out))
	if got["lookup"] == nil && got["put"] == nil {
		t.Fatalf("lookup.py %v printed no result:\n%s", args, out)
	}
	return got
}

// response is one HTTP answer, read whole.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r response) String() string { return fmt.Sprintf("%d %s", r.Status, bytes.TrimSpace(r.Body)) }

// decode decodes the body as JSON into out, failing the test otherwise.
func (r response) decode(t testing.TB, out any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, out); err != nil {
		t.Fatalf("answer %s is no JSON: %v", r, err)
	}
}

// httpDo sends one request to the server (path from its root, or a full
// URL); token "" sends none. header: name, value pairs.
func (d *deployer) httpDo(t testing.TB, method, path, token string, body []byte, header ...string) response {
	t.Helper()
	u := path
	if strings.HasPrefix(path, "/") {
		u = d.s.URL + path
	}
	ctx, cancel := context.WithTimeout(context.Background(), fnTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, u, err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// accepted is the body of a 202 (and of a task that is still running).
type accepted struct {
	Task, State, URL string
}

// callEndpoint sends a request to a deployment URL with the deployer's
// token and, while it answers 202 (a cold container slower than the sync
// limit), follows its task URL: it returns the final answer.
func (d *deployer) callEndpoint(t testing.TB, method, path string, body any) response {
	t.Helper()
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	r := d.httpDo(t, method, path, d.token, raw)
	deadline := time.Now().Add(fnTimeout)
	for r.Status == http.StatusAccepted && time.Now().Before(deadline) {
		var a accepted
		r.decode(t, &a)
		if a.URL == "" {
			t.Fatalf("%s %s: 202 without a task URL: %s", method, path, r)
		}
		r = d.httpDo(t, http.MethodGet, a.URL+"?wait=60", d.token, nil)
	}
	return r
}

// expectJSON calls path and compares its JSON answer with want.
func (d *deployer) expectJSON(t testing.TB, method, path string, body any, want string) {
	t.Helper()
	r := d.callEndpoint(t, method, path, body)
	if r.Status != http.StatusOK || !sameJSON(r.Body, []byte(want)) {
		t.Errorf("%s %s: %s; want 200 %s", method, path, r, want)
	}
}

// expectStatus checks the status of one request with token.
func (d *deployer) expectStatus(t testing.TB, method, path, token string, body []byte, want int) response {
	t.Helper()
	r := d.httpDo(t, method, path, token, body)
	if r.Status != want {
		t.Errorf("%s %s: %s; want %d", method, path, r, want)
	}
	if want == http.StatusNotFound && r.Status == want && !bytes.Contains(r.Body, []byte("NOT_FOUND")) {
		t.Errorf("%s %s: a 404 without the NOT_FOUND code: %s", method, path, r)
	}
	return r
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return bytes.Equal(xs, ys)
}

// appRow is a deployed app as GraphQL shows it.
type appRow struct {
	ID, Name, State      string
	Version, LiveVersion int
	Functions            []fnRow
}

type fnRow struct {
	ID, Name, Kind, Deployment string
	Version                    int
	StoppedAt                  *time.Time
}

// apps are the apps named name (ephemeral ones included).
func (d *deployer) apps(t testing.TB, name string) []appRow {
	t.Helper()
	var out struct {
		Apps struct{ Edges []struct{ Node appRow } }
	}
	gql(t, d.s.URL, d.token, `query($n: String!) { apps(first: 100, where: {name: $n}) { edges { node {
		id name state version liveVersion functions { id name kind deployment version stoppedAt } } } } }`,
		map[string]any{"n": name}, &out)
	var rows []appRow
	for _, e := range out.Apps.Edges {
		rows = append(rows, e.Node)
	}
	return rows
}

// deployedApp is the one deployed (not ephemeral, not stopped) app named
// name.
func (d *deployer) deployedApp(t testing.TB, name string) appRow {
	t.Helper()
	for _, a := range d.apps(t, name) {
		if a.State == "DEPLOYED" {
			return a
		}
	}
	t.Fatalf("no deployed app %s: %+v", name, d.apps(t, name))
	return appRow{}
}

// function is the ID of function name in version v of app a.
func (a appRow) function(t testing.TB, name string, v int) string {
	t.Helper()
	for _, f := range a.Functions {
		if f.Name == name && f.Version == v {
			return f.ID
		}
	}
	t.Fatalf("app %s has no function %s in version %d: %+v", a.Name, name, v, a.Functions)
	return ""
}

// taskRow is a task as GraphQL shows it.
type taskRow struct {
	ID, State, Source, ErrorKind, ErrorMessage, IdempotencyKey string
	Attempt, MaxAttempts                                       int
}

const taskFields = `id state source errorKind errorMessage idempotencyKey attempt maxAttempts`

// ended reports whether a task's state is final.
func ended(state string) bool {
	switch state {
	case "COMPLETE", "ERROR", "CANCELLED", "DEAD":
		return true
	}
	return false
}

// task reads a task at once.
func (d *deployer) task(t testing.TB, id string) taskRow {
	t.Helper()
	var out struct{ Node taskRow }
	gql(t, d.s.URL, d.token, `query($id: ID!) { node(id: $id) { ... on Task { `+taskFields+` } } }`,
		map[string]any{"id": id}, &out)
	return out.Node
}

// awaitEnded waits for a task to end (awaitTask, 30 s at a time).
func (d *deployer) awaitEnded(t testing.TB, id string) taskRow {
	t.Helper()
	deadline := time.Now().Add(fnTimeout)
	for {
		var out struct{ AwaitTask taskRow }
		gql(t, d.s.URL, d.token, `query($id: ID!) { awaitTask(id: $id, waitSeconds: 30) { `+taskFields+` } }`,
			map[string]any{"id": id}, &out)
		if ended(out.AwaitTask.State) {
			if strings.Contains(out.AwaitTask.ErrorKind, "container") {
				d.logContainers(t, id)
			}
			return out.AwaitTask
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still %s after %v", id, out.AwaitTask.State, fnTimeout)
		}
		time.Sleep(100 * time.Millisecond) // awaitTask may answer at once for a DEAD task
	}
}

// checkVersions: deploy v1 of dep_versions.py, call its endpoint over HTTP
// and its function from a second script; deploy v2 (another return
// value): /v1 and /v2 answer with their own values and the alias with
// v2's; a rollback points the alias back at v1; stopping v1 makes /v1
// answer 404 and the alias v2 again.
func checkVersions(t *testing.T, d *deployer, docker bool) {
	dir := depCopy(t, "dep_versions.py")
	t.Logf("deploy v1:\n%s", d.deploy(t, dir, "dep_versions.py"))
	hello := func(v string) string { return `{"version": "` + v + `", "echo": {"x": 1}}` }
	d.expectJSON(t, http.MethodPost, "/endpoint/hello", map[string]any{"x": 1}, hello("v1"))
	d.expectJSON(t, http.MethodPost, "/endpoint/hello/v1", map[string]any{"x": 1}, hello("v1"))
	if got := d.lookup(t, "e2e-versions", "which", "5")["lookup"]; got == nil || got[0] != `"v1:5"` {
		t.Errorf("lookup of which in v1: %q, want \"v1:5\"", got)
	}
	// The FUNCTION's URL: args and kwargs as JSON, waiting for the result.
	d.expectJSON(t, http.MethodPost, "/job/which?wait=60", map[string]any{"args": []any{6}}, `"v1:6"`)
	if !docker {
		d.expectStatus(t, http.MethodGet, "/endpoint/hello", d.token, nil, http.StatusMethodNotAllowed)
	}

	rewriteMarked(t, filepath.Join(dir, "dep_versions.py"), "E2E-VERSION", `VERSION = "v2"`)
	t.Logf("deploy v2:\n%s", d.deploy(t, dir, "dep_versions.py"))
	a := d.deployedApp(t, "e2e-versions")
	if a.Version != 2 || a.LiveVersion != 2 {
		t.Errorf("after the second deploy: version %d, live version %d; want 2 and 2", a.Version, a.LiveVersion)
	}
	for path, v := range map[string]string{"/endpoint/hello/v1": "v1", "/endpoint/hello/v2": "v2", "/endpoint/hello": "v2"} {
		d.expectJSON(t, http.MethodPost, path, map[string]any{"x": 1}, hello(v))
	}
	for _, c := range []struct{ version, want string }{{"", `"v2:5"`}, {"1", `"v1:5"`}, {"2", `"v2:5"`}} {
		args := []string{"e2e-versions", "which", "5"}
		if c.version != "" {
			args = append(args, "--version", c.version)
		}
		if got := d.lookup(t, args...)["lookup"]; got == nil || got[0] != c.want {
			t.Errorf("lookup %v: %q, want %s", args, got, c.want)
		}
	}
	if out := d.cliOK(t, "", "app", "list"); !strings.Contains(out, "e2e-versions") {
		t.Errorf("levers9 app list does not show e2e-versions:\n%s", out)
	}

	t.Logf("rollback:\n%s", d.cliOK(t, "", "app", "rollback", "e2e-versions"))
	if a := d.deployedApp(t, "e2e-versions"); a.LiveVersion != 1 {
		t.Errorf("after the rollback the live version is %d, want 1", a.LiveVersion)
	}
	d.expectJSON(t, http.MethodPost, "/endpoint/hello", map[string]any{"x": 1}, hello("v1"))
	if got := d.lookup(t, "e2e-versions", "which", "5")["lookup"]; got == nil || got[0] != `"v1:5"` {
		t.Errorf("lookup after the rollback: %q, want \"v1:5\"", got)
	}

	t.Logf("stop v1:\n%s", d.cliOK(t, "", "app", "stop", "e2e-versions", "--version", "1"))
	d.expectStatus(t, http.MethodPost, "/endpoint/hello/v1", d.token, []byte(`{"x": 1}`), http.StatusNotFound)
	d.expectStatus(t, http.MethodPost, "/job/which/v1", d.token, []byte(`{"args": [1]}`), http.StatusNotFound)
	// Stopping the live version moved the alias to the newest serving one.
	d.expectJSON(t, http.MethodPost, "/endpoint/hello", map[string]any{"x": 1}, hello("v2"))
	d.expectJSON(t, http.MethodPost, "/endpoint/hello/v2", map[string]any{"x": 1}, hello("v2"))
	if got := d.lookup(t, "e2e-versions", "which", "5", "--version", "1")["lookup"]; got == nil || got[0] != "error NOT_FOUND" {
		t.Errorf("lookup of stopped v1: %q, want error NOT_FOUND", got)
	}
}

// checkLongCall: an endpoint whose function outlasts its sync limit
// answers 202 with the task's URL, which then gives the result; an
// endpoint that raises answers 500 naming its task.
func checkLongCall(t *testing.T, d *deployer) {
	dir := depCopy(t, "dep_long.py")
	d.deploy(t, dir, "dep_long.py")
	start := time.Now()
	r := d.httpDo(t, http.MethodPost, "/endpoint/slow", d.token, []byte(`{"seconds": 3}`))
	t.Logf("POST /endpoint/slow answered %d after %v", r.Status, time.Since(start))
	if r.Status != http.StatusAccepted {
		t.Fatalf("POST /endpoint/slow: %s; want 202", r)
	}
	var a accepted
	r.decode(t, &a)
	loc := r.Header.Get("Location")
	if a.Task == "" || loc != "/api/tasks/"+a.Task || a.URL != loc || r.Header.Get("Levers9-Task") != a.Task ||
		(a.State != "PENDING" && a.State != "RUNNING") {
		t.Errorf("202: body %+v, Location %q, Levers9-Task %q; want the task's URL in both and its state",
			a, loc, r.Header.Get("Levers9-Task"))
	}
	res := d.httpDo(t, http.MethodGet, loc+"?wait=60", d.token, nil)
	for res.Status == http.StatusAccepted && time.Since(start) < fnTimeout {
		res = d.httpDo(t, http.MethodGet, loc+"?wait=60", d.token, nil)
	}
	if res.Status != http.StatusOK || !sameJSON(res.Body, []byte(`{"slept": 3}`)) {
		t.Errorf("GET %s: %s; want 200 {\"slept\": 3}", loc, res)
	}
	if task := d.task(t, a.Task); task.State != "COMPLETE" || task.Source != "HTTP" {
		t.Errorf("task %s: %+v; want COMPLETE from HTTP", a.Task, task)
	}

	r = d.callEndpoint(t, http.MethodPost, "/endpoint/boom", map[string]any{"n": 7})
	var e struct {
		Error struct{ Code, Message, Task string }
	}
	if r.Status != http.StatusInternalServerError {
		t.Fatalf("POST /endpoint/boom: %s; want 500", r)
	}
	r.decode(t, &e)
	if e.Error.Code != "FUNCTION_ERROR" || !strings.Contains(e.Error.Message, "boom 7") || e.Error.Task == "" ||
		r.Header.Get("Levers9-Task") != e.Error.Task {
		t.Errorf("POST /endpoint/boom: %s, Levers9-Task %q; want FUNCTION_ERROR naming the task", r, r.Header.Get("Levers9-Task"))
	}
}

// checkQueue: an item failing twice then succeeding ends COMPLETE at its
// third attempt; one always failing ends DEAD (a dead letter, listed as
// such), and a requeue runs it again (items put from Python); two POSTs
// /queue/NAME with one Idempotency-Key make one task.
func checkQueue(t *testing.T, d *deployer) {
	dir := depCopy(t, "dep_queue.py")
	d.deploy(t, dir, "dep_queue.py")
	a := d.deployedApp(t, "e2e-queue")

	// Items put from Python (pickled): .put() of a looked-up queue.
	flaky := d.lookup(t, "e2e-queue", "flaky_q", `{"key": "k1"}`, "--put")["put"]
	if flaky == nil {
		t.Fatal("lookup.py --put printed no task")
	}
	if task := d.awaitEnded(t, flaky[0]); task.State != "COMPLETE" || task.Attempt != 3 || task.MaxAttempts != 4 {
		t.Errorf("flaky item: %+v; want COMPLETE at attempt 3 of 4", task)
	}

	// An item failing its 2 attempts.
	got := d.lookup(t, "e2e-queue", "dead_q", `"poison"`, "--put")["put"]
	if got == nil {
		t.Fatal("lookup.py --put printed no task")
	}
	dead := got[0]
	task := d.awaitEnded(t, dead)
	if task.State != "DEAD" || task.Attempt != 2 || task.Source != "QUEUE" || !strings.Contains(task.ErrorMessage, "always fails") {
		t.Errorf("poison item: %+v; want DEAD after 2 attempts, from QUEUE", task)
	}
	var deadList struct {
		Tasks struct {
			Edges []struct{ Node struct{ ID string } }
		}
	}
	gql(t, d.s.URL, d.token, `{ tasks(first: 100, where: {state: DEAD}) { edges { node { id } } } }`, nil, &deadList)
	if len(deadList.Tasks.Edges) != 1 || deadList.Tasks.Edges[0].Node.ID != dead {
		t.Errorf("DEAD tasks: %+v; want just %s", deadList.Tasks.Edges, dead)
	}
	var fn struct {
		Node struct{ DeadLetters, QueueDepth int }
	}
	gqlSoft(t, d.s.URL, d.token, `query($id: ID!) { node(id: $id) { ... on Function { deadLetters queueDepth } } }`,
		map[string]any{"id": a.function(t, "dead_q", 1)}, &fn)
	if fn.Node.DeadLetters != 1 || fn.Node.QueueDepth != 0 {
		t.Errorf("dead_q: %+v; want 1 dead letter, depth 0", fn.Node)
	}
	t.Logf("requeue:\n%s", d.cliOK(t, "", "queue", "requeue", dead))
	if task := d.task(t, dead); task.State == "DEAD" || task.Attempt > 1 {
		t.Errorf("after the requeue: %+v; want PENDING (or running) again", task)
	}
	if task := d.awaitEnded(t, dead); task.State != "DEAD" || task.Attempt != 2 {
		t.Errorf("the requeued item: %+v; want DEAD again after 2 more attempts", task)
	}

	// Idempotency: the second POST with the key returns the first task.
	post := func() (response, accepted) {
		r := d.httpDo(t, http.MethodPost, "/queue/noop_q", d.token, []byte(`{"n": 1}`), "Idempotency-Key", "e2e-key-1")
		var a accepted
		if r.Status == http.StatusOK || r.Status == http.StatusAccepted {
			r.decode(t, &a)
		}
		return r, a
	}
	r1, a1 := post()
	r2, a2 := post()
	if r1.Status != http.StatusAccepted || r2.Status != http.StatusOK || a1.Task == "" || a1.Task != a2.Task {
		t.Errorf("two POSTs with one Idempotency-Key: %s then %s; want 202 then 200 with the same task", r1, r2)
	}
	var n struct{ Tasks struct{ TotalCount int } }
	gql(t, d.s.URL, d.token, `query($f: ID!) { tasks(where: {functionID: $f}) { totalCount } }`,
		map[string]any{"f": a.function(t, "noop_q", 1)}, &n)
	if n.Tasks.TotalCount != 1 {
		t.Errorf("noop_q has %d tasks, want 1", n.Tasks.TotalCount)
	}
	if a1.Task == "" {
		return
	}
	if task := d.awaitEnded(t, a1.Task); task.State != "COMPLETE" || task.IdempotencyKey != "e2e-key-1" {
		t.Errorf("the idempotent item: %+v; want COMPLETE with its key", task)
	}
}

// checkSecrets: `levers9 secret create hf HF_TOKEN=…`; the function
// naming hf sees the value, the other does not; the value is in no job
// log, no GraphQL answer (secrets, functions, tasks), no CLI output and
// not in the server's output.
func checkSecrets(t *testing.T, d *deployer) {
	value := "hf_e2e_" + strings.TrimPrefix(newSecret(), "lv9_")
	sum := sha256.Sum256([]byte(value))
	wantSum := `"` + hex.EncodeToString(sum[:]) + `"`
	leaks := func(what string, b []byte) {
		t.Helper()
		for _, form := range []string{value, base64.StdEncoding.EncodeToString([]byte(value)),
			base64.URLEncoding.EncodeToString([]byte(value))} {
			if bytes.Contains(b, []byte(form)) {
				t.Errorf("the secret's value appears in %s", what)
				return
			}
		}
	}
	leaks("levers9 secret create's output", []byte(d.cliOK(t, "", "secret", "create", "hf", "HF_TOKEN="+value)))
	list := d.cliOK(t, "", "secret", "list")
	if !strings.Contains(list, "hf") {
		t.Errorf("levers9 secret list does not show hf:\n%s", list)
	}
	leaks("levers9 secret list", []byte(list))

	dir := depCopy(t, "dep_secrets.py")
	leaks("levers9 deploy's output", []byte(d.deploy(t, dir, "dep_secrets.py")))
	with := d.lookup(t, "e2e-secrets", "with_secret")
	without := d.lookup(t, "e2e-secrets", "without_secret")
	if with["lookup"] == nil || with["lookup"][0] != wantSum {
		t.Errorf("with_secret saw HF_TOKEN with digest %q, want %s", with["lookup"], wantSum)
	}
	if without["lookup"] == nil || without["lookup"][0] != "null" {
		t.Errorf("without_secret saw HF_TOKEN with digest %q, want none", without["lookup"])
	}

	a := d.deployedApp(t, "e2e-secrets")
	raw := func(query string, vars map[string]any) []byte {
		body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
		data, errs := send(t, d.s.URL+"/graphql", d.token, body)
		if len(errs) > 0 {
			t.Errorf("%s: %+v", query, errs)
		}
		return data
	}
	leaks("GraphQL secrets", raw(`{ secrets { edges { node { id name keys createdAt updatedAt } } } }`, nil))
	leaks("GraphQL apps", raw(`{ apps { edges { node { id name functions { id name secrets } } } } }`, nil))
	var jobs []string
	for _, name := range []string{"with_secret", "without_secret"} {
		id := a.function(t, name, 1)
		data := raw(`query($id: ID!) { node(id: $id) { ... on Function { id name secrets kind deployment
			containers { id jobID } tasks { edges { node { id result { data blob } errorMessage errorTraceback } } } } } }`,
			map[string]any{"id": id})
		leaks("GraphQL function "+name, data)
		var fn struct {
			Node struct{ Containers []struct{ JobID string } }
		}
		_ = json.Unmarshal(data, &fn)
		for _, c := range fn.Node.Containers {
			if c.JobID != "" {
				jobs = append(jobs, c.JobID)
			}
		}
	}
	for _, l := range []map[string][]string{with, without} {
		if l["task"] != nil {
			leaks("GraphQL task", raw(`query($id: ID!) { node(id: $id) { ... on Task { id state result { data blob }
				errorMessage errorTraceback function { id secrets } } } }`, map[string]any{"id": l["task"][0]}))
		}
	}
	if len(jobs) == 0 {
		t.Error("the functions have no container jobs to read logs of")
	}
	for _, job := range jobs {
		leaks("job "+job+"'s log", raw(`query($j: ID!) { jobLogs(jobId: $j, first: 1000) { text } }`, map[string]any{"j": job}))
		leaks("job "+job, raw(`query($j: ID!) { node(id: $j) { ... on Job { id } } }`, map[string]any{"j": job}))
	}
	leaks("the server's stderr", []byte(d.s.stderr.String()))
	leaks("the server's stdout", []byte(strings.Join(drainStdout(d.s), "\n")))
}

// drainStdout takes the server's stdout lines printed so far (without
// waiting for more) and returns all of them.
func drainStdout(s *server) []string {
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				return s.stdout
			}
			s.stdout = append(s.stdout, line)
		default:
			return s.stdout
		}
	}
}

// checkCrossTenant: another tenant's token gets 404 on this tenant's
// endpoint, job and queue URLs, cannot look up its function or put on its
// queue; a public endpoint answers /pub/TENANT/ENV/… without a token,
// and a private one does not.
func checkCrossTenant(t *testing.T, d *deployer, c credentials) {
	dir := depCopy(t, "dep_public.py")
	d.deploy(t, dir, "dep_public.py")
	a := d.deployedApp(t, "e2e-public")
	d.expectJSON(t, http.MethodPost, "/endpoint/priv_hello", map[string]any{"a": 1}, `{"private": {"a": 1}}`)
	d.expectJSON(t, http.MethodGet, "/endpoint/pub_hello", nil, `{"public": true}`)

	other := d.as(t, apiTokenOf(t, d.s, otherTenantAdmin(t, d.s, c)))
	for _, req := range []struct{ method, path, body string }{
		{http.MethodPost, "/endpoint/priv_hello", `{"a": 1}`},
		{http.MethodPost, "/endpoint/priv_hello/v1", `{"a": 1}`},
		{http.MethodGet, "/endpoint/pub_hello", ""},
		{http.MethodPost, "/job/priv_fn?wait=5", `{"args": [1]}`},
		{http.MethodPost, "/queue/priv_q", `{"a": 1}`},
		{http.MethodPost, "/queue/priv_q/v1", `{"a": 1}`},
	} {
		var body []byte
		if req.body != "" {
			body = []byte(req.body)
		}
		other.expectStatus(t, req.method, req.path, other.token, body, http.StatusNotFound)
	}
	for _, name := range []string{"priv_fn", "priv_q"} {
		if got := other.lookup(t, "e2e-public", name)["lookup"]; got == nil || got[0] != "error NOT_FOUND" {
			t.Errorf("the other tenant's lookup of %s: %q, want error NOT_FOUND", name, got)
		}
	}
	// pickle.dumps(None) as the item.
	if errs := gqlErrors(t, d.s.URL, other.token, `mutation($f: ID!) { putTask(function: $f, item: {data: "gAROLg=="}) { id } }`,
		map[string]any{"f": a.function(t, "priv_q", 1)}); errCode(errs) != "NOT_FOUND" {
		t.Errorf("the other tenant's putTask: %+v, want NOT_FOUND", errs)
	}
	if errs := gqlErrors(t, d.s.URL, other.token, `{ lookupFunction(app: "e2e-public", name: "priv_fn") { id } }`,
		nil); errCode(errs) != "NOT_FOUND" {
		t.Errorf("the other tenant's lookupFunction: %+v, want NOT_FOUND", errs)
	}
	var n struct{ Tasks struct{ TotalCount int } }
	gql(t, d.s.URL, d.token, `query($f: ID!) { tasks(where: {functionID: $f}) { totalCount } }`,
		map[string]any{"f": a.function(t, "priv_q", 1)}, &n)
	if n.Tasks.TotalCount != 0 {
		t.Errorf("priv_q has %d tasks after the other tenant's puts, want 0", n.Tasks.TotalCount)
	}

	var v struct {
		Viewer struct {
			Tenant      struct{ Slug string }
			Environment struct{ Name string }
		}
	}
	gql(t, d.s.URL, d.token, `{ viewer { tenant { slug } environment { name } } }`, nil, &v)
	pub := "/pub/" + v.Viewer.Tenant.Slug + "/" + v.Viewer.Environment.Name
	r := d.httpDo(t, http.MethodGet, pub+"/endpoint/pub_hello", "", nil)
	for r.Status == http.StatusAccepted { // a cold container: follow the task, anonymously too
		var acc accepted
		r.decode(t, &acc)
		r = d.httpDo(t, http.MethodGet, acc.URL+"?wait=60", "", nil)
	}
	if r.Status != http.StatusOK || !sameJSON(r.Body, []byte(`{"public": true}`)) {
		t.Errorf("GET %s/endpoint/pub_hello without a token: %s; want 200 {\"public\": true}", pub, r)
	}
	d.expectStatus(t, http.MethodPost, pub+"/endpoint/priv_hello", "", []byte(`{"a": 1}`), http.StatusNotFound)
	d.expectStatus(t, http.MethodGet, "/pub/other/"+v.Viewer.Environment.Name+"/endpoint/pub_hello", "", nil, http.StatusNotFound)
	if r := d.httpDo(t, http.MethodPost, "/endpoint/priv_hello", "", []byte(`{"a": 1}`)); r.Status == http.StatusOK {
		t.Errorf("POST /endpoint/priv_hello without a token: %s; want a refusal", r)
	}
}

// servedURL matches the temporary URL `levers9 serve` prints for dep_serve.py.
var servedURL = regexp.MustCompile(`/endpoint/served/app_[0-9A-Za-z]+`)

// checkServe: `levers9 serve dep_serve.py` prints a temporary URL that
// answers; saving a change redeploys it (the new value answers within
// seconds); SIGINT stops the app and its URL answers 404.
func checkServe(t *testing.T, d *deployer) {
	dir := depCopy(t, "dep_serve.py")
	ctx, cancel := context.WithTimeout(context.Background(), fnTimeout)
	defer cancel()
	cmd := d.command(ctx, t, dir, "serve", filepath.Join(dir, "dep_serve.py"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		select {
		case <-exited:
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			t.Logf("levers9 serve's output:\n%s", out)
		}
	}()
	latest := func() string {
		all := servedURL.FindAllString(out.String(), -1)
		if len(all) == 0 {
			return ""
		}
		return all[len(all)-1]
	}
	// waitValue polls the latest printed URL until it answers value.
	waitValue := func(value string) (string, time.Duration) {
		t.Helper()
		start := time.Now()
		for time.Since(start) < fnTimeout {
			select {
			case err := <-exited:
				exited <- err
				t.Fatalf("levers9 serve exited (%v) before serving %s", err, value)
			default:
			}
			if u := latest(); u != "" {
				r := d.httpDo(t, http.MethodGet, u, d.token, nil) // no query: it would be the function's kwargs
				if r.Status == http.StatusOK && sameJSON(r.Body, []byte(`{"value": "`+value+`"}`)) {
					return u, time.Since(start)
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("levers9 serve: %s not served within %v (latest URL %q)", value, fnTimeout, latest())
		return "", 0
	}
	first, took := waitValue("first")
	t.Logf("serving at %s after %v", first, took)

	rewriteMarked(t, filepath.Join(dir, "dep_serve.py"), "E2E-SERVE", `VALUE = "second"`)
	second, took := waitValue("second")
	t.Logf("the saved change answered at %s %v after the save", second, took)

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err
		t.Logf("levers9 serve exited after SIGINT: %v", err)
	case <-time.After(stopTimeout):
		t.Fatalf("levers9 serve still running %v after SIGINT", stopTimeout)
	}
	for _, u := range []string{first, second} {
		d.expectStatus(t, http.MethodGet, u, d.token, nil, http.StatusNotFound)
	}
	for _, a := range d.apps(t, "e2e-serve") {
		if a.State != "STOPPED" {
			t.Errorf("app %s (e2e-serve) is %s after levers9 serve ended, want STOPPED", a.ID, a.State)
		}
	}
}

// checkRealtime: WebSockets through /endpoint/NAME reach the REALTIME
// functions' handlers: text comes back prefixed, bytes as they are; two
// deployments' containers serve at once on one node (each its own port);
// a second connection works too; one without a token is refused.
func checkRealtime(t *testing.T, d *deployer) {
	dir := depCopy(t, "dep_realtime.py")
	d.deploy(t, dir, "dep_realtime.py")
	wsURL := "ws" + strings.TrimPrefix(d.s.URL, "http") + "/endpoint/"
	ctx, cancel := context.WithTimeout(context.Background(), fnTimeout)
	defer cancel()
	dial := func(name string) *websocket.Conn {
		t.Helper()
		ws, resp, err := websocket.Dial(ctx, wsURL+name,
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + d.token}}})
		if err != nil {
			status := 0
			if resp != nil {
				status = resp.StatusCode
			}
			d.logFunction(t, d.deployedApp(t, "e2e-realtime").function(t, name, 1))
			t.Fatalf("WebSocket to /endpoint/%s: %v (status %d)", name, err, status)
		}
		return ws
	}
	echo := func(ws *websocket.Conn, name, text string) {
		t.Helper()
		for _, m := range []struct {
			typ       websocket.MessageType
			send, out string
		}{
			{websocket.MessageText, text, name + ": " + text},
			{websocket.MessageBinary, "\x00\x01\x02", "\x00\x01\x02"},
		} {
			if err := ws.Write(ctx, m.typ, []byte(m.send)); err != nil {
				t.Fatalf("%s: write: %v", name, err)
			}
			typ, got, err := ws.Read(ctx)
			if err != nil || typ != m.typ || string(got) != m.out {
				t.Errorf("%s: sent %q, read %v %q (%v); want %q", name, m.send, typ, got, err, m.out)
			}
		}
	}
	// Both open at once.
	a, b := dial("echo_ws"), dial("echo_ws2")
	echo(a, "echo_ws", "hello a")
	echo(b, "echo_ws2", "hello b")
	echo(a, "echo_ws", "again a")
	for _, ws := range []*websocket.Conn{a, b} {
		if err := ws.Close(websocket.StatusNormalClosure, "done"); err != nil {
			t.Logf("close: %v", err)
		}
	}
	// A new connection to the container left warm.
	c := dial("echo_ws")
	echo(c, "echo_ws", "hello c")
	_ = c.Close(websocket.StatusNormalClosure, "done")

	// Without a token: refused.
	if ws, _, err := websocket.Dial(ctx, wsURL+"echo_ws", nil); err == nil {
		ws.CloseNow()
		t.Error("a WebSocket without a token was accepted")
	}
}

// A schedule firing every minute, with two server replicas on one
// PostgreSQL (the first runs the built-in node, the second none): over
// two ticks, each tick made exactly one CRON task, both replicas see the
// same, and none was skipped.
func TestDeployCron(t *testing.T) {
	t.Parallel()
	pg := dbtest.PostgresURL(t)
	s, c := functionsServer(t, pg, "process")
	other := startServer(t, shortTempDir(t), pg, "LEVERS9_LOCAL_NODE=false")
	t.Cleanup(other.stop)
	d := newDeployer(t, s, c.Token)
	dir := depCopy(t, "dep_cron.py")
	t.Logf("deploy:\n%s", d.deploy(t, dir, "dep_cron.py"))
	fnID := d.deployedApp(t, "e2e-cron").function(t, "tick", 1)

	type tick struct {
		ID, State, Source string
		CreatedAt         time.Time
	}
	ticks := func(base string) []tick {
		var out struct {
			Tasks struct{ Edges []struct{ Node tick } }
		}
		gql(t, base, c.Token, `query($f: ID!) { tasks(first: 100, where: {functionID: $f}) { edges { node {
			id state source createdAt } } } }`, map[string]any{"f": fnID}, &out)
		var ts []tick
		for _, e := range out.Tasks.Edges {
			ts = append(ts, e.Node)
		}
		return ts
	}
	var next struct {
		Node struct {
			NextRunAt *time.Time
			NextRuns  []time.Time
		}
	}
	if gqlSoft(t, s.URL, c.Token, `query($f: ID!) { node(id: $f) { ... on Function { nextRunAt nextRuns(count: 3) } } }`,
		map[string]any{"f": fnID}, &next); next.Node.NextRunAt == nil || len(next.Node.NextRuns) != 3 ||
		!next.Node.NextRuns[0].Equal(*next.Node.NextRunAt) || next.Node.NextRunAt.Second() != 0 ||
		next.Node.NextRuns[1].Sub(next.Node.NextRuns[0]) != time.Minute {
		t.Errorf("next runs of * * * * *: %+v; want 3 whole minutes a minute apart from nextRunAt", next.Node)
	}

	// The first tick: within a minute of the deploy, plus the 5 s pass.
	deadline := time.Now().Add(150 * time.Second)
	var first time.Time
	for first.IsZero() {
		if ts := ticks(s.URL); len(ts) > 0 {
			first = ts[0].CreatedAt.UTC().Truncate(time.Minute)
		} else if time.Now().After(deadline) {
			t.Fatal("no tick within 150 s of the deploy")
		} else {
			time.Sleep(time.Second)
		}
	}
	// Past the second tick and its pass, before the third.
	time.Sleep(time.Until(first.Add(80 * time.Second)))
	for _, base := range []string{s.URL, other.URL} {
		perMinute := map[time.Time][]string{}
		for _, tk := range ticks(base) {
			if tk.Source != "CRON" {
				t.Errorf("task %s from %s, want CRON", tk.ID, tk.Source)
			}
			m := tk.CreatedAt.UTC().Truncate(time.Minute)
			perMinute[m] = append(perMinute[m], tk.ID)
		}
		want := []time.Time{first, first.Add(time.Minute)}
		for _, m := range want {
			if len(perMinute[m]) != 1 {
				t.Errorf("through %s: tick %s made tasks %v, want exactly one", base, m.Format(time.TimeOnly), perMinute[m])
			}
		}
		if len(perMinute) != len(want) {
			t.Errorf("through %s: tasks in minutes %v, want %v", base, perMinute, want)
		}
	}
	for _, tk := range ticks(s.URL) {
		if got := d.awaitEnded(t, tk.ID); got.State != "COMPLETE" {
			t.Errorf("tick task %s: %+v, want COMPLETE", tk.ID, got)
		}
	}
	var fn struct {
		Node struct {
			LastRunAt   *time.Time
			SkippedRuns int
		}
	}
	gql(t, s.URL, c.Token, `query($f: ID!) { node(id: $f) { ... on Function { lastRunAt skippedRuns } } }`,
		map[string]any{"f": fnID}, &fn)
	if fn.Node.LastRunAt == nil || !fn.Node.LastRunAt.Equal(first.Add(time.Minute)) || fn.Node.SkippedRuns != 0 {
		t.Errorf("tick's last run %v, skipped %d; want %v and 0", fn.Node.LastRunAt, fn.Node.SkippedRuns, first.Add(time.Minute))
	}
}

// gqlSoft is gql for checks that should not end the test: errors are
// reported and out is left as it was.
func gqlSoft(t testing.TB, base, token, query string, vars map[string]any, out any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	data, errs := send(t, base+"/graphql", token, body)
	if len(errs) > 0 {
		t.Errorf("%s: errors %+v", query, errs)
		return
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Errorf("decoding %s: %v", data, err)
	}
}

// logContainers logs the output of the containers of a task's function
// (why a runner did not start).
func (d *deployer) logContainers(t testing.TB, taskID string) {
	t.Helper()
	var out struct {
		Node struct {
			Function struct{ ID string }
		}
	}
	gqlSoft(t, d.s.URL, d.token, `query($id: ID!) { node(id: $id) { ... on Task { function { id } } } }`,
		map[string]any{"id": taskID}, &out)
	d.logFunction(t, out.Node.Function.ID)
}

// logFunction logs the output of function fnID's containers, at most 3
// of them.
func (d *deployer) logFunction(t testing.TB, fnID string) {
	t.Helper()
	var out struct {
		Node struct {
			Name       string
			Containers []struct{ JobID string }
		}
	}
	gqlSoft(t, d.s.URL, d.token, `query($id: ID!) { node(id: $id) { ... on Function { name containers { jobID } } } }`,
		map[string]any{"id": fnID}, &out)
	for i, c := range out.Node.Containers {
		if i == 3 || c.JobID == "" {
			break
		}
		var logs struct{ JobLogs []struct{ Text string } }
		gqlSoft(t, d.s.URL, d.token, `query($j: ID!) { jobLogs(jobId: $j, first: 200) { text } }`, map[string]any{"j": c.JobID}, &logs)
		var lines []string
		for _, l := range logs.JobLogs {
			lines = append(lines, l.Text)
		}
		t.Logf("%s's container job %s:\n%s", out.Node.Name, c.JobID, strings.Join(lines, "\n"))
	}
}
