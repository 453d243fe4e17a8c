package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// fileServer makes big.bin (32 MiB of random bytes) in its working
// directory, prints its SHA-256, and serves the directory on the port named
// http of service web; /ws is a WebSocket that echoes each message (a
// minimal one: the standard library has none).
const fileServer = `
import base64, hashlib, http.server, os
data = os.urandom(32 << 20)
with open("big.bin", "wb") as f:
    f.write(data)
print("sha256", hashlib.sha256(data).hexdigest(), flush=True)

class H(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_GET(self):
        if self.path != "/ws":
            return super().do_GET()
        key = self.headers["Sec-WebSocket-Key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", base64.b64encode(hashlib.sha1(key.encode()).digest()).decode())
        self.end_headers()
        self.close_connection = True
        r, w = self.rfile, self.wfile
        while True:
            h = r.read(2)
            if len(h) < 2:
                return
            op, n = h[0] & 0x0F, h[1] & 0x7F
            if n == 126:
                n = int.from_bytes(r.read(2), "big")
            elif n == 127:
                n = int.from_bytes(r.read(8), "big")
            mask = r.read(4) if h[1] & 0x80 else bytes(4)
            p = bytes(b ^ mask[i % 4] for i, b in enumerate(r.read(n)))
            if op == 8:
                w.write(bytes([0x88, len(p)]) + p)
                w.flush()
                return
            if op == 9:
                op = 10
            hdr = bytes([0x80 | op])
            if len(p) < 126:
                hdr += bytes([len(p)])
            elif len(p) < 65536:
                hdr += bytes([126]) + len(p).to_bytes(2, "big")
            else:
                hdr += bytes([127]) + len(p).to_bytes(8, "big")
            w.write(hdr + p)
            w.flush()

http.server.ThreadingHTTPServer(("127.0.0.1", int(os.environ["LEVERS9_WEB_PORT_HTTP"])), H).serve_forever()
`

const bigSize = 32 << 20

var shaLine = regexp.MustCompile(`^sha256 ([0-9a-f]{64})$`)

// The relay through the real binary and the built-in node: a 32 MiB
// download through /relay/ arrives whole and byte-exact, also while
// another download of it stalls (its reader reads nothing for a while,
// and finishes intact after); a WebSocket echoes through it; levers9
// port-forward serves the same port on a local one until Ctrl-C. Access:
// another member sees the job, so the relay lets them through, but exec
// and attach are the owner's (FORBIDDEN, exit code 1); a user of another
// tenant finds nothing anywhere (NOT_FOUND).
func TestRelayJob(t *testing.T) {
	t.Parallel()
	s, c, env := interactiveServer(t, "")
	var sub struct{ SubmitJob struct{ ID string } }
	gql(t, s.URL, c.Token, `mutation($c: [String!]!) { submitJob(spec: {name: "files", queue: "inter", interactive: true,
		services: [{name: "web", command: $c, cpu: 1, memoryMiB: 256, ports: [{name: "http"}]}]}) { id } }`,
		map[string]any{"c": []string{"/usr/bin/python3", "-c", fileServer}}, &sub)
	id := sub.SubmitJob.ID
	var want string
	poll(t, "the file's checksum in the job's log", func() bool {
		for _, l := range jobLogs(t, s.URL, c.Token, id, 0) {
			if m := shaLine.FindStringSubmatch(l.Text); m != nil {
				want = m[1]
				return true
			}
		}
		if st := jobByID(t, s.URL, c.Token, id).Status; st != "PENDING" && st != "RUNNING" {
			t.Fatalf("the file server ended: %s", st)
		}
		return false
	})
	t.Cleanup(func() { clientRun(t, env, "", "cancel", id) })

	base := s.URL + "/relay/" + id + "/web/http"
	get := func(client *http.Client, token, path string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	checkFile := func(what string, resp *http.Response, prefix []byte) {
		t.Helper()
		h := sha256.New()
		h.Write(prefix)
		n, err := io.Copy(h, resp.Body)
		n += int64(len(prefix))
		if err != nil || n != bigSize || hex.EncodeToString(h.Sum(nil)) != want {
			t.Errorf("%s: %d bytes (want %d), error %v, SHA-256 %x (want %s)", what, n, bigSize, err, h.Sum(nil), want)
		}
	}
	// The job runs before it listens.
	client := &http.Client{Timeout: startTimeout} // only catches hangs
	poll(t, "the file server answering through the relay", func() bool {
		resp := get(client, c.Token, "/")
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode == http.StatusOK
	})

	t.Run("a large download next to a stalled one", func(t *testing.T) {
		// Each its own connection to the server: a stream of its own.
		slow := get(&http.Client{Transport: &http.Transport{}}, c.Token, "/big.bin")
		if slow.StatusCode != http.StatusOK {
			t.Fatalf("stalled download: %s", slow.Status)
		}
		head := make([]byte, 1<<20)
		if _, err := io.ReadFull(slow.Body, head); err != nil {
			t.Fatal(err)
		}
		fast := get(&http.Client{Transport: &http.Transport{}}, c.Token, "/big.bin")
		if fast.StatusCode != http.StatusOK || fast.ContentLength != bigSize {
			t.Fatalf("download: %s, %d bytes", fast.Status, fast.ContentLength)
		}
		checkFile("the download beside a stalled one", fast, nil)
		checkFile("the stalled download, read on", slow, head)
	})

	t.Run("websocket", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		ws, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/ws",
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + c.Token}}})
		if err != nil {
			t.Fatalf("WebSocket through the relay: %v (%v)", err, resp)
		}
		defer ws.CloseNow()
		ws.SetReadLimit(1 << 20)
		big := make([]byte, 200<<10)
		_, _ = rand.Read(big)
		for _, m := range []struct {
			typ  websocket.MessageType
			data []byte
		}{
			{websocket.MessageText, []byte("hello through the relay")},
			{websocket.MessageBinary, big},
			{websocket.MessageText, []byte("after a large one")},
		} {
			if err := ws.Write(ctx, m.typ, m.data); err != nil {
				t.Fatal(err)
			}
			typ, got, err := ws.Read(ctx)
			if err != nil || typ != m.typ || !bytes.Equal(got, m.data) {
				t.Fatalf("echo of %d bytes: type %v, %d bytes, %v", len(m.data), typ, len(got), err)
			}
		}
		if err := ws.Close(websocket.StatusNormalClosure, "bye"); err != nil {
			t.Errorf("closing: %v", err)
		}
	})

	t.Run("port-forward", func(t *testing.T) {
		cmd := exec.Command(binary, "port-forward", id, "web:http", "0")
		cmd.Env = append(cleanEnv(), env...)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		stderr := &lockedBuffer{}
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			if t.Failed() {
				t.Logf("port-forward stderr:\n%s", stderr)
			}
		})
		line, err := bufio.NewReader(stdout).ReadString('\n')
		m := regexp.MustCompile(`^Forwarding from (127\.0\.0\.1:\d+) -> web:http\n$`).FindStringSubmatch(line)
		if err != nil || m == nil {
			t.Fatalf("port-forward printed %q (%v), want the local address", line, err)
		}
		tr := &http.Transport{} // keeps its connection open: Ctrl-C ends it too
		local := &http.Client{Transport: tr, Timeout: startTimeout}
		resp, err := local.Get("http://" + m[1] + "/big.bin")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		checkFile("the download through port-forward", resp, nil)
		resp, err = local.Get("http://" + m[1] + "/")
		if err != nil {
			t.Fatal(err)
		}
		listing, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(listing), "big.bin") {
			t.Errorf("the listing through port-forward: %q", listing)
		}

		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("port-forward after Ctrl-C: %v, want exit 0", err)
			}
		case <-contextTimeout(t, stopTimeout).Done():
			t.Fatalf("port-forward still running %v after Ctrl-C", stopTimeout)
		}
		tr.CloseIdleConnections()
	})

	t.Run("access", func(t *testing.T) {
		member := apiTokenOf(t, s, memberToken(t, s, c.Token))
		memberEnv := cliEnv(t, s, member)
		// A member of the tenant sees the job: the relay serves them.
		if resp := get(client, member, "/"); resp.StatusCode != http.StatusOK {
			t.Errorf("relay as another member: %s, want 200", resp.Status)
		}
		// Terminals are the owner's and the tenant admins'.
		for _, args := range [][]string{{"exec", id, "--", "true"}, {"attach", id}} {
			_, errOut, code := clientRun(t, memberEnv, "", args...)
			if code != 1 || !strings.Contains(errOut, "FORBIDDEN") || !strings.Contains(errOut, "owner") {
				t.Errorf("levers9 %v as another member: exit %d, stderr %q; want 1 and FORBIDDEN", args, code, errOut)
			}
		}

		// Another tenant: the job does not exist for its users.
		stranger := apiTokenOf(t, s, otherTenantAdmin(t, s, c))
		strangerEnv := cliEnv(t, s, stranger)
		for _, args := range [][]string{{"exec", id, "--", "true"}, {"attach", id}, {"port-forward", id, "web:http", "0"}} {
			_, errOut, code := clientRun(t, strangerEnv, "", args...)
			if code != 1 || !strings.Contains(errOut, "NOT_FOUND") {
				t.Errorf("levers9 %v from another tenant: exit %d, stderr %q; want 1 and NOT_FOUND", args, code, errOut)
			}
		}
		for _, path := range []string{
			"/relay/" + id + "/web/http/big.bin",
			"/streams/exec/" + id + "/web?cmd=true",
			"/streams/attach/" + id + "/web",
			"/streams/tcp/" + id + "/web/http",
		} {
			ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
			_, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.URL, "http")+path,
				&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + stranger}}})
			cancel()
			var refusal struct{ Code string }
			if resp != nil && resp.Body != nil {
				_ = json.NewDecoder(resp.Body).Decode(&refusal)
			}
			if err == nil || resp == nil || resp.StatusCode != http.StatusNotFound || refusal.Code != "NOT_FOUND" {
				t.Errorf("%s from another tenant: %v, %+v; want 404 NOT_FOUND", path, err, refusal)
			}
		}
	})
	s.stop()
}

// apiTokenOf creates an API token as the user signed in with session.
func apiTokenOf(t *testing.T, s *server, session string) string {
	t.Helper()
	var out struct{ CreateAPIToken struct{ Token string } }
	gql(t, s.URL, session, `mutation { createAPIToken(name: "e2e") { token } }`, nil, &out)
	return out.CreateAPIToken.Token
}

// otherTenantAdmin creates a second tenant as the superadmin and returns a
// session token of its admin.
func otherTenantAdmin(t *testing.T, s *server, c credentials) string {
	t.Helper()
	const password = "other tenant password 1"
	var signIn struct{ SignIn struct{ Token string } }
	gql(t, s.URL, "", `mutation($p: String!) { signIn(email: "superadmin@levers9.local", password: $p) { token } }`,
		map[string]any{"p": c.SuperadminPassword}, &signIn)
	gql(t, s.URL, signIn.SignIn.Token, `mutation($p: String!) { createTenant(input: {name: "Other", slug: "other",
		emailDomains: ["other.test"], adminEmail: "boss@other.test", adminPassword: $p}) { tenant { id } } }`,
		map[string]any{"p": password}, new(map[string]any))
	gql(t, s.URL, "", `mutation($p: String!) { signIn(email: "boss@other.test", password: $p) { token } }`,
		map[string]any{"p": password}, &signIn)
	return signIn.SignIn.Token
}

// contextTimeout is a context ending after d or with the test.
func contextTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
