package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

func TestParseForward(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want forward
		err  string
	}{
		{[]string{"main:22"}, forward{service: "main", port: "22"}, ""},
		{[]string{"main:22", "2222"}, forward{local: 2222, service: "main", port: "22"}, ""},
		{[]string{"db:postgres", "0"}, forward{service: "db", port: "postgres"}, ""},
		{[]string{"5433:db:postgres"}, forward{local: 5433, service: "db", port: "postgres"}, ""},
		{[]string{"5433:db:postgres", "5434"}, forward{}, "names the local port already"},
		{[]string{"main"}, forward{}, "want SERVICE:PORT"},
		{[]string{"a:b:c:d"}, forward{}, "want SERVICE:PORT"},
		{[]string{":22"}, forward{}, "both parts"},
		{[]string{"main:"}, forward{}, "both parts"},
		{[]string{"main:70000"}, forward{}, "not between 1 and 65535"},
		{[]string{"main:22", "http"}, forward{}, "local port"},
		{[]string{"x:main:22"}, forward{}, "local port"},
		{[]string{"main:22", "-1"}, forward{}, "local port"},
	} {
		got, err := parseForward(tc.args)
		if tc.err == "" && (err != nil || got != tc.want) {
			t.Errorf("parseForward(%q) = %+v, %v; want %+v", tc.args, got, err, tc.want)
		}
		if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("parseForward(%q): %v, want an error saying %q", tc.args, err, tc.err)
		}
	}
}

// tcp refuses its first stream (as the relay refuses a job that is not
// running yet); the others read bytes until the client's half-close (an
// empty message), answer them in upper case and end.
func (f *fakeStreams) tcp(w http.ResponseWriter, r *http.Request) {
	f.record(r)
	f.mu.Lock()
	f.tcpSeen++
	first := f.tcpSeen == 1
	f.mu.Unlock()
	if first {
		refused(w, http.StatusBadRequest, "BAD_USER_INPUT", "job job_1 is pending: only a running job's services can be reached")
		return
	}
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer ws.CloseNow()
	var got []byte
	for {
		_, p, err := ws.Read(r.Context())
		if err != nil {
			return
		}
		if len(p) == 0 {
			break // the client's end of input
		}
		got = append(got, p...)
	}
	_ = ws.Write(r.Context(), websocket.MessageBinary, bytes.ToUpper(got))
	_ = ws.Close(websocket.StatusNormalClosure, "")
}

// Each local connection gets its own stream; a refused one is said and
// closed while the listener goes on; the ends of input pass both ways.
func TestPortForward(t *testing.T) {
	t.Parallel()
	f, srv := newFakeStreams(t)
	ctx, cancel := context.WithCancel(t.Context())
	out, outW := io.Pipe()
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		c := clientFlags{Server: srv, Token: "lv9_x"}
		done <- portForward(ctx, c, "job_1", forward{service: "shell", port: "ssh"}, outW, &stderr)
		outW.Close()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the first line: %v", err)
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "Forwarding from ")
	addr, ok2 := strings.CutSuffix(addr, " -> shell:ssh")
	if !ok || !ok2 || !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("first line %q", line)
	}

	// Refused: closed without a byte.
	c1, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(c1); err != nil || len(b) != 0 {
		t.Errorf("refused connection: read %q, %v; want its end", b, err)
	}
	c1.Close()
	if !strings.Contains(stderr.String(), "BAD_USER_INPUT: job job_1 is pending") {
		t.Errorf("the refusal is not said: %q", stderr.String())
	}

	// Accepted: the half-close reaches the server, whose answer and end
	// come back.
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	_ = c2.(*net.TCPConn).CloseWrite()
	if b, err := io.ReadAll(c2); err != nil || string(b) != "HELLO" {
		t.Errorf("forwarded connection: read %q, %v; want HELLO", b, err)
	}

	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("port-forward ended with %d after Ctrl-C, want 0", code)
	}
	if got := f.streams(); len(got) != 2 || got[1] != "/streams/tcp/job_1/shell/ssh?" {
		t.Errorf("streams %q", got)
	}
}
