package tunnel_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/levers9/levers9/agent"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/tunnel"
	"github.com/levers9/levers9/internal/wire"
)

// echoServer is a service answering each line it reads with the line
// upper-cased, on its port "echo".
const echoServer = `
import os, socketserver
class H(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            self.wfile.write(line.upper()); self.wfile.flush()
socketserver.ThreadingTCPServer.allow_reuse_address = True
socketserver.ThreadingTCPServer(("127.0.0.1", int(os.environ["LEVERS9_WEB_PORT_ECHO"])), H).serve_forever()
`

func TestStreamTCP(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		st := w.startAgent(t, "n1")
		j := w.runOn(t, st.NodeID, jobspec.Service{Name: "web", Command: []string{"python3", "-c", echoServer},
			CPU: 1, MemoryMiB: 64, Ports: []jobspec.Port{{Name: "echo"}}})
		var port int
		w.waitFor(t, "service running with its port", func() bool {
			s, err := w.db.Ent.Service.Query().Where(service.JobID(j.ID)).Only(w.sys)
			if err != nil || string(s.Status) != "RUNNING" || len(s.HostPorts) != 1 {
				return false
			}
			port = s.HostPorts[0].Port
			return true
		})
		ctx := context.Background()
		open := wire.StreamOpen{Kind: wire.StreamTCP, JobID: j.ID, Attempt: 1, Service: "web", Port: port}
		var c io.ReadWriteCloser
		// The service may not listen yet when it is reported running.
		w.waitFor(t, "the stream to connect", func() bool {
			var err error
			c, err = w.srv.OpenStream(ctx, st.NodeID, open)
			return err == nil
		})
		defer c.Close()
		r := bufio.NewReader(c)
		for _, line := range []string{"hello\n", "again\n"} {
			if _, err := io.WriteString(c, line); err != nil {
				t.Fatal(err)
			}
			got, err := r.ReadString('\n')
			if err != nil || got != string(bytesUpper(line)) {
				t.Fatalf("echo = %q, %v; want %q", got, err, bytesUpper(line))
			}
		}

		refused := []struct {
			name string
			open wire.StreamOpen
			code fault.Code
		}{
			{"a port the service does not have", wire.StreamOpen{Kind: wire.StreamTCP, JobID: j.ID, Attempt: 1, Service: "web", Port: 22}, fault.NotFound},
			{"another service", wire.StreamOpen{Kind: wire.StreamTCP, JobID: j.ID, Attempt: 1, Service: "db", Port: port}, fault.NotFound},
			{"another attempt", wire.StreamOpen{Kind: wire.StreamTCP, JobID: j.ID, Attempt: 2, Service: "web", Port: port}, fault.NotFound},
			{"another job", wire.StreamOpen{Kind: wire.StreamTCP, JobID: "job_nope", Attempt: 1, Service: "web", Port: port}, fault.NotFound},
			{"a bad port", wire.StreamOpen{Kind: wire.StreamTCP, JobID: j.ID, Attempt: 1, Service: "web", Port: 70000}, fault.BadUserInput},
			{"attach without tty", wire.StreamOpen{Kind: wire.StreamAttach, JobID: j.ID, Attempt: 1, Service: "web"}, fault.BadUserInput},
		}
		for _, tc := range refused {
			_, err := w.srv.OpenStream(ctx, st.NodeID, tc.open)
			var fe *fault.Error
			if !errors.As(err, &fe) || fe.Code != tc.code {
				t.Errorf("%s: err = %v; want %s", tc.name, err, tc.code)
			}
		}
		if _, err := w.srv.OpenStream(ctx, "nod_elsewhere", open); !errors.Is(err, tunnel.ErrNotHere) {
			t.Errorf("node not connected here: err = %v; want ErrNotHere", err)
		}
	})
}

// A node serves at most its limit of streams at once; one more is refused
// as UNAVAILABLE, and a closed one frees its place.
func TestStreamLimit(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		st := w.startAgentWith(t, "n1", func(c *agent.Config) { c.MaxStreams = 2 })
		j := w.runOn(t, st.NodeID, jobspec.Service{Name: "web", Command: []string{"python3", "-c", echoServer},
			CPU: 1, MemoryMiB: 64, Ports: []jobspec.Port{{Name: "echo"}}})
		var port int
		w.waitFor(t, "service running with its port", func() bool {
			s, err := w.db.Ent.Service.Query().Where(service.JobID(j.ID)).Only(w.sys)
			if err != nil || string(s.Status) != "RUNNING" || len(s.HostPorts) != 1 {
				return false
			}
			port = s.HostPorts[0].Port
			return true
		})
		ctx := context.Background()
		open := wire.StreamOpen{Kind: wire.StreamTCP, JobID: j.ID, Attempt: 1, Service: "web", Port: port}
		var held []io.ReadWriteCloser
		w.waitFor(t, "two streams", func() bool {
			c, err := w.srv.OpenStream(ctx, st.NodeID, open)
			if err == nil {
				held = append(held, c)
			}
			return len(held) == 2
		})
		_, err := w.srv.OpenStream(ctx, st.NodeID, open)
		var fe *fault.Error
		if !errors.As(err, &fe) || fe.Code != fault.Unavailable || !strings.Contains(fe.Message, "limit") {
			t.Fatalf("a third stream: err = %v; want UNAVAILABLE naming the limit", err)
		}
		held[0].Close()
		w.waitFor(t, "a place freed by a closed stream", func() bool {
			c, err := w.srv.OpenStream(ctx, st.NodeID, open)
			if err != nil {
				return false
			}
			c.Close()
			return true
		})
		held[1].Close()
	})
}

func bytesUpper(s string) []byte {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 32
		}
	}
	return b
}
