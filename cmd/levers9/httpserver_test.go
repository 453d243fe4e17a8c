package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// startServer runs `levers9 server` with args on a free port and SQLite in
// a temporary directory, and returns its address and the first start's API
// token.
func startServer(t *testing.T, args ...string) (addr, token string) {
	t.Helper()
	url, token := runTestServer(t, nil, nil, args...)
	return strings.TrimPrefix(url, "http://"), token
}

// runTestServer runs `levers9 server` in-process on a free port, SQLite in
// a temporary directory, no node and no drain wait, with env standing in
// for the environment and edit (when set) adjusting the parsed
// configuration; it returns the server's URL and the first start's API
// token, and stops the server when t ends.
func runTestServer(t *testing.T, env map[string]string, edit func(*serverConfig), args ...string) (url, token string) {
	t.Helper()
	base := []string{"--addr=127.0.0.1:0", "--data-dir=" + t.TempDir(), "--local-node=false", "--log-level=error", "--drain-delay=0"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, err := parseServerConfig(append(base, args...), lookup, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- runServer(ctx, cfg, pw); _ = pw.Close() }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	// "levers9 server on http://127.0.0.1:PORT (database: sqlite)", and
	// later "  API token:   lv9_…".
	lines := bufio.NewScanner(pr)
	for token == "" && lines.Scan() {
		line := lines.Text()
		if _, rest, ok := strings.Cut(line, "server on "); ok {
			url, _, _ = strings.Cut(rest, " ")
		}
		if _, rest, ok := strings.Cut(line, "API token:"); ok {
			token = strings.TrimSpace(rest)
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if url == "" || token == "" {
		t.Fatalf("server did not start (URL %q, token %q): %v", url, token, lines.Err())
	}
	return url, token
}

// An unauthenticated client sending a header and then a body one byte at
// a time (the reported attack kept a connection 65 s and more) is cut off
// once the body timeout is spent; a body sent at a real speed for longer
// than that is not.
func TestSlowBodiesAreCutOff(t *testing.T) {
	t.Parallel()
	addr, token := startServer(t, "--http-header-timeout=1s", "--http-body-timeout=2s", "--http-min-body-rate=4096")
	// Not a timing: a trickle this long outlasts the 2 s body timeout by
	// far, so a server that waited for it would still be waiting.
	const budget = 12 * time.Second

	cases := []struct {
		name, head, piece string
	}{
		{"anonymous GraphQL", "POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10000\r\n\r\n", "x"},
		{"dashboard sign-in form", "POST /signin HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\n", "x"},
		{"chunked GraphQL", "POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", "1\r\nx\r\n"},
		{"a header sent slowly", "GET /healthz HTTP/1.1\r\nHost: x\r\n", "X-Pad: y\r\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, tc.head); err != nil {
				t.Fatal(err)
			}
			closed := make(chan error, 1)
			go func() {
				_, err := io.Copy(io.Discard, conn) // an answer, then the end of the connection
				closed <- err
			}()
			tick := time.NewTicker(250 * time.Millisecond)
			defer tick.Stop()
			deadline := time.After(budget)
			for {
				select {
				case err := <-closed:
					if err != nil && !strings.Contains(err.Error(), "reset") {
						t.Fatalf("reading from the server: %v", err)
					}
					return // the server hung up
				case <-tick.C:
					_, _ = io.WriteString(conn, tc.piece) // fails once the server has closed; the reader tells
				case <-deadline:
					t.Fatalf("the server still holds the connection after %v of trickling", budget)
				}
			}
		})
	}

	t.Run("a big body at a real speed", func(t *testing.T) {
		t.Parallel()
		// 240 KiB in 16 KiB pieces, 200 ms apart: about 3 s, past the body
		// timeout, at 80 KiB/s, far above the minimum rate. JSON white
		// space pads a query the server must read to the end to answer.
		const pieces, size = 15, 16 << 10
		head, tail := `{"query":`, `"{ viewer { user { email } } }"}`
		pr, pw := io.Pipe()
		go func() {
			_, _ = io.WriteString(pw, head)
			for range pieces {
				time.Sleep(200 * time.Millisecond)
				if _, err := io.WriteString(pw, strings.Repeat(" ", size)); err != nil {
					return
				}
			}
			_, _ = io.WriteString(pw, tail)
			_ = pw.Close()
		}()
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/graphql", pr)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		req.ContentLength = int64(len(head) + pieces*size + len(tail))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("a body sent at 80 KiB/s was cut off: %v", err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK || !strings.Contains(string(b), `"email":"admin@`) {
			t.Fatalf("%d %s", res.StatusCode, b)
		}
	})

	t.Run("ordinary requests", func(t *testing.T) {
		t.Parallel()
		res, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		body := `{"query":"mutation { signIn(email: \"nobody@x.test\", password: \"wrong password!\") { token } }"}`
		res, err = http.Post("http://"+addr+"/graphql", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(b), "UNAUTHENTICATED") {
			t.Fatalf("anonymous signIn: %d %s", res.StatusCode, b)
		}
	})
}
