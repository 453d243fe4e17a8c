package deploy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startAgent runs a levers9 agent process until the end of the test,
// without the test's LEVERS9_* environment.
func startAgent(t *testing.T, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LEVERS9_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("agent output:\n%s", out.String())
		}
	})
}

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

// gqlClient calls the server's GraphQL API as the preset admin token.
type gqlClient struct {
	t           *testing.T
	base, token string
}

func (g gqlClient) do(query string, vars map[string]any, out any) {
	g.t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		g.t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, g.base+"/graphql", bytes.NewReader(body))
	if err != nil {
		g.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+g.token)
	res, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer res.Body.Close()
	var resp struct {
		Data   json.RawMessage
		Errors []struct{ Message string }
	}
	if err := json.NewDecoder(res.Body).Decode(&resp); err != nil {
		g.t.Fatalf("graphql: HTTP %d: %v", res.StatusCode, err)
	}
	if len(resp.Errors) > 0 {
		g.t.Fatalf("graphql %q: %v", query, resp.Errors)
	}
	if out != nil {
		if err := json.Unmarshal(resp.Data, out); err != nil {
			g.t.Fatal(err)
		}
	}
}

// poll retries fn until it returns true or ctx ends.
func poll(ctx context.Context, t *testing.T, what string, fn func() bool) {
	t.Helper()
	for !fn() {
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s", what)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// presetToken is an API token secret in the server's format ("lv9_" and
// 52 lower-case base32 characters), preset for the first admin.
func presetToken(t *testing.T) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "lv9_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", b)
}

// freePort is a TCP port free on 127.0.0.1 a moment ago, for Docker to
// publish the server on.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
