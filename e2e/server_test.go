package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/dockertest"
)

// Bounds on waiting for the server; generous, as they only catch hangs.
const (
	startTimeout = 2 * time.Minute
	stopTimeout  = time.Minute
)

// The "Done when": on a fresh data directory the first start prints
// a token, and the curl request it prints returns the viewer and tenant.
func TestFirstStartPrintsWorkingToken(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		dir := t.TempDir()
		s := startServer(t, dir, url)
		c := s.credentials()
		if c.AdminEmail != "admin@levers9.local" || c.AdminPassword == "" || c.SuperadminPassword == "" {
			t.Errorf("credentials = %+v", c)
		}
		if !strings.HasPrefix(c.Token, "lv9_") {
			t.Errorf("API token %q does not look like one", c.Token)
		}

		// The printed curl command, sent as printed.
		if c.CurlURL != s.URL+"/graphql" || c.CurlToken != c.Token {
			t.Errorf("curl command targets %s with token %s; want %s/graphql with %s", c.CurlURL, c.CurlToken, s.URL, c.Token)
		}
		var out viewerData
		post(t, c.CurlURL, c.CurlToken, []byte(c.CurlBody), &out)
		out.check(t, "admin@levers9.local", "Default")

		checkHealthy(t, s.URL)
		if s.Dialect == "sqlite" {
			// The embedded default keeps everything under ./levers9-data.
			if _, err := os.Stat(filepath.Join(dir, "levers9-data", "levers9.db")); err != nil {
				t.Errorf("no SQLite database in ./levers9-data: %v", err)
			}
		}
		s.stop()
	})
}

// A second start on the same data keeps the first start's secrets: it
// prints none, and the token printed first keeps working.
func TestRestartKeepsCredentials(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		dir := t.TempDir()
		first := startServer(t, dir, url)
		c := first.credentials()
		first.stop()

		second := startServer(t, dir, url)
		var out viewerData
		gql(t, second.URL, c.Token, `{ viewer { user { email } tenant { name } } }`, nil, &out)
		out.check(t, "admin@levers9.local", "Default")
		second.stop()
		for _, line := range second.allStdout() {
			if strings.Contains(line, "API token") || strings.Contains(line, "password") || strings.Contains(line, "First start") {
				t.Errorf("second start printed credentials again: %q", line)
			}
		}
	})
}

// LEVERS9_ADMIN_TOKEN and LEVERS9_ADMIN_PASSWORD preset the first admin's
// secrets for scripted set-ups.
func TestPresetAdminSecrets(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		token := newSecret()
		const password = "preset password for e2e"
		s := startServer(t, t.TempDir(), url, "LEVERS9_ADMIN_TOKEN="+token, "LEVERS9_ADMIN_PASSWORD="+password)
		c := s.credentials()
		if c.Token != token || c.AdminPassword != password {
			t.Errorf("printed token %q and password %q; want the preset %q and %q", c.Token, c.AdminPassword, token, password)
		}

		var out viewerData
		gql(t, s.URL, token, `{ viewer { user { email } tenant { name } } }`, nil, &out)
		out.check(t, "admin@levers9.local", "Default")

		var signIn struct{ SignIn struct{ Token string } }
		gql(t, s.URL, "", `mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { token } }`,
			map[string]any{"e": "admin@levers9.local", "p": password}, &signIn)
		out = viewerData{}
		gql(t, s.URL, signIn.SignIn.Token, `{ viewer { user { email } tenant { name } } }`, nil, &out)
		out.check(t, "admin@levers9.local", "Default")

		if errs := gqlErrors(t, s.URL, "", `mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { token } }`,
			map[string]any{"e": "admin@levers9.local", "p": password + "!"}); len(errs) == 0 {
			t.Error("signIn with a wrong password succeeded")
		}
		s.stop()
	})
}

// A first start that fails (here: a malformed preset token) creates
// nothing, so the next start is a first start again and shows its secrets.
func TestFailedFirstStartCreatesNothing(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		dir := t.TempDir()
		args := []string{"server", "--addr", "127.0.0.1:0"}
		if strings.HasPrefix(url, "postgres") {
			args = append(args, "--database-url", url)
		}
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, binary, args...)
		cmd.Dir = dir
		cmd.Env = append(cleanEnv(), "LEVERS9_ADMIN_TOKEN=not-a-token")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "LEVERS9_ADMIN_TOKEN") {
			t.Fatalf("start with a malformed preset token: err %v, output:\n%s", err, out)
		}
		s := startServer(t, dir, url)
		c := s.credentials()
		var v viewerData
		gql(t, s.URL, c.Token, `{ viewer { user { email } tenant { name } } }`, nil, &v)
		v.check(t, "admin@levers9.local", "Default")
		s.stop()
	})
}

// Replicas starting together on one PostgreSQL migrate and seed once: all
// serve, and exactly one of them prints first-start secrets.
func TestReplicasStartTogether(t *testing.T) {
	t.Parallel()
	url := dbtest.PostgresURL(t)
	servers := make([]*server, 3)
	for i := range servers {
		servers[i] = launchServer(t, t.TempDir(), url)
	}
	var tokens []string
	for _, s := range servers {
		s.ready(url)
		// The welcome, secrets included, is printed before serving starts.
		checkHealthy(t, s.URL)
		s.stop()
		for _, line := range s.allStdout() {
			if m := tokenLine.FindStringSubmatch(line); m != nil {
				tokens = append(tokens, m[1])
			}
		}
	}
	if len(tokens) != 1 {
		t.Fatalf("%d replicas printed first-start secrets, want 1", len(tokens))
	}
	s := startServer(t, t.TempDir(), url)
	var v viewerData
	gql(t, s.URL, tokens[0], `{ viewer { user { email } tenant { name } } }`, nil, &v)
	v.check(t, "admin@levers9.local", "Default")
	s.stop()
}

// server is a running `levers9 server` process.
type server struct {
	t       testing.TB
	cmd     *exec.Cmd
	lines   chan string // stdout, line by line; closed at EOF
	stdout  []string    // the lines taken from lines so far
	stderr  *lockedBuffer
	exited  chan struct{}
	waitErr error // set before exited is closed

	URL     string // as printed, e.g. http://127.0.0.1:41234
	Dialect string // as printed: sqlite or postgres
}

var firstLine = regexp.MustCompile(`^levers9 server on (http://127\.0\.0\.1:\d+) \(database: (\w+)\)$`)

// startServer starts the binary in dir as its working directory, on the
// default SQLite data directory there, or on url when it is PostgreSQL,
// and waits for its first line. env adds environment variables.
func startServer(t testing.TB, dir, url string, env ...string) *server {
	t.Helper()
	s := launchServer(t, dir, url, env...)
	s.ready(url)
	return s
}

// launchServer starts the server process without waiting for it.
func launchServer(t testing.TB, dir, url string, env ...string) *server {
	t.Helper()
	// Any free port, unless the test sets LEVERS9_ADDR (to restart on the
	// same address, which agents know).
	addr := "127.0.0.1:0"
	for _, kv := range env {
		if a, ok := strings.CutPrefix(kv, "LEVERS9_ADDR="); ok {
			addr = a
		}
	}
	args := []string{"server", "--addr", addr}
	if strings.HasPrefix(url, "postgres") {
		args = append(args, "--database-url", url)
	}
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	// A test's own env wins (the last value of a variable counts). No drain
	// wait on SIGTERM unless a test asks for one: nothing balances load here.
	cmd.Env = append(append(append(cleanEnv(), "LEVERS9_DRAIN_DELAY=0"), localNodeEnv(t)...), env...)
	pr, pw := io.Pipe()
	s := &server{
		t: t, cmd: cmd, lines: make(chan string, 1024),
		stderr: &lockedBuffer{}, exited: make(chan struct{}),
	}
	cmd.Stdout, cmd.Stderr = pw, s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
		_, _ = io.Copy(io.Discard, pr) // never block the process on a full pipe
	}()
	go func() {
		s.waitErr = cmd.Wait() // returns once stdout is copied to pw
		pw.Close()
		close(s.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			_ = cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			t.Logf("server stdout:\n%s\nserver stderr:\n%s", strings.Join(s.allStdout(), "\n"), s.stderr)
		}
	})

	return s
}

// localNodeEnv is the built-in node's setting for tests that choose none:
// the process runtime (jobs as an unprivileged user), whose behaviour the
// older tests describe, where the server runs as root; else auto (Docker).
// With no registry, command-only services on Docker run in the locally
// built busybox image. Tests of Docker on the built-in node ask for it.
func localNodeEnv(t testing.TB) []string {
	env := []string{"LEVERS9_LOCAL_NODE_DEFAULT_IMAGE=" + dockertest.Busybox(t)}
	if os.Geteuid() == 0 {
		env = append(env, "LEVERS9_LOCAL_NODE_RUNTIME=process")
	}
	return env
}

// ready waits for the first line, which names the URL and the database.
func (s *server) ready(url string) {
	s.t.Helper()
	m := s.waitFor(firstLine)
	s.URL, s.Dialect = m[1], m[2]
	if want := dialectOf(url); s.Dialect != want {
		s.t.Fatalf("server runs on %s, want %s", s.Dialect, want)
	}
}

// dialectOf names the database of url as the server prints it.
func dialectOf(url string) string {
	if strings.HasPrefix(url, "postgres") {
		return "postgres"
	}
	return "sqlite"
}

// cleanEnv is the test's environment without levers9 settings, so that the
// server sees only what a test passes.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LEVERS9_") {
			env = append(env, kv)
		}
	}
	return env
}

// waitFor reads stdout until a line matches re and returns its submatches.
func (s *server) waitFor(re *regexp.Regexp) []string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				<-s.exited
				s.t.Fatalf("server output ended (exit: %v) before a line matching %s", s.waitErr, re)
			}
			s.stdout = append(s.stdout, line)
			if m := re.FindStringSubmatch(line); m != nil {
				return m
			}
		case <-ctx.Done():
			s.t.Fatalf("no line matching %s within %v", re, startTimeout)
		}
	}
}

// credentials are what the first start prints.
type credentials struct {
	AdminEmail, AdminPassword string
	SuperadminPassword        string
	Token                     string
	// The "Try it" curl command.
	CurlURL, CurlToken, CurlBody string
}

var (
	adminLine      = regexp.MustCompile(`^\s*admin:\s+(\S+)\s+password:\s+(\S.*?)\s*$`)
	superadminLine = regexp.MustCompile(`^\s*superadmin:\s+(\S+)\s+password:\s+(\S.*?)\s*$`)
	tokenLine      = regexp.MustCompile(`^\s*API token:\s+(\S+)\s*$`)
	curlLine       = regexp.MustCompile(`^\s*curl -s (\S+) -H 'Authorization: Bearer (\S+)' -H 'Content-Type: application/json' -d '(.+)'\s*$`)
)

// credentials reads the first start's secrets and sample command.
func (s *server) credentials() credentials {
	s.t.Helper()
	var c credentials
	m := s.waitFor(adminLine)
	c.AdminEmail, c.AdminPassword = m[1], m[2]
	c.SuperadminPassword = s.waitFor(superadminLine)[2]
	c.Token = s.waitFor(tokenLine)[1]
	m = s.waitFor(curlLine)
	c.CurlURL, c.CurlToken, c.CurlBody = m[1], m[2], m[3]
	return c
}

// stop sends SIGTERM and expects a clean exit.
func (s *server) stop() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	select {
	case <-s.exited:
	case <-ctx.Done():
		s.t.Fatalf("server still running %v after SIGTERM", stopTimeout)
	}
	if s.waitErr != nil {
		s.t.Fatalf("server exited after SIGTERM with %v, want status 0", s.waitErr)
	}
}

// allStdout returns everything the server printed; call after it exited.
func (s *server) allStdout() []string {
	for line := range s.lines {
		s.stdout = append(s.stdout, line)
	}
	return s.stdout
}

type viewerData struct {
	Viewer struct {
		User   struct{ Email string }
		Tenant *struct{ Name string }
	}
}

func (v viewerData) check(t testing.TB, email, tenant string) {
	t.Helper()
	if v.Viewer.User.Email != email || v.Viewer.Tenant == nil || v.Viewer.Tenant.Name != tenant {
		t.Fatalf("viewer = %+v, want user %s in tenant %s", v.Viewer, email, tenant)
	}
}

type gqlError struct {
	Message    string         `json:"message"`
	Extensions map[string]any `json:"extensions"`
}

// gql sends a GraphQL request to base/graphql and decodes its data into out,
// failing on any error.
func gql(t testing.TB, base, token, query string, vars map[string]any, out any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	post(t, base+"/graphql", token, body, out)
}

// gqlErrors sends a GraphQL request expected to fail and returns its errors.
func gqlErrors(t testing.TB, base, token, query string, vars map[string]any) []gqlError {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	_, errs := send(t, base+"/graphql", token, body)
	return errs
}

// post sends body as is, like curl -d, and decodes the answer's data.
func post(t testing.TB, url, token string, body []byte, out any) {
	t.Helper()
	data, errs := send(t, url, token, body)
	if len(errs) > 0 {
		t.Fatalf("POST %s: errors %+v", url, errs)
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
}

func send(t testing.TB, url, token string, body []byte) (json.RawMessage, []gqlError) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Data   json.RawMessage `json:"data"`
		Errors []gqlError      `json:"errors"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("POST %s: status %d, body %q: %v", url, resp.StatusCode, raw, err)
	}
	return r.Data, r.Errors
}

func checkHealthy(t testing.TB, base string) {
	t.Helper()
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "ok\n" {
		t.Errorf("GET /healthz: %d %q", resp.StatusCode, body)
	}
}

// lockedBuffer collects a process's stderr while tests may read it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newSecret makes a token the way the server does: "lv9_" and 256 random
// bits in lower-case base32 without padding.
func newSecret() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails: it crashes the program instead
	return "lv9_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}
