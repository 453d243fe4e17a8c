package tunnel_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/wire"
)

// termConn is the client's side of a terminal stream.
type termConn struct {
	t              *testing.T
	c              net.Conn
	stdout, stderr strings.Builder
	exit           *int
	errText        string
}

func (tc *termConn) send(typ byte, p []byte) {
	tc.t.Helper()
	if err := wire.WriteFrame(tc.c, typ, p); err != nil {
		tc.t.Fatalf("sending frame %d: %v", typ, err)
	}
}

// until reads frames until done holds or the stream ends; the deadline
// only catches hangs.
func (tc *termConn) until(what string, done func() bool) {
	tc.t.Helper()
	_ = tc.c.SetReadDeadline(time.Now().Add(hang))
	buf := make([]byte, 0, wire.MaxFramePayload)
	for !done() {
		typ, p, err := wire.ReadFrame(tc.c, buf)
		if err != nil {
			tc.t.Fatalf("waiting for %s: %v; stdout %q, stderr %q", what, err, tc.stdout.String(), tc.stderr.String())
		}
		switch typ {
		case wire.FrameStdout:
			tc.stdout.Write(p)
		case wire.FrameStderr:
			tc.stderr.Write(p)
		case wire.FrameExit:
			code, err := wire.ParseExit(p)
			if err != nil {
				tc.t.Fatal(err)
			}
			tc.exit = &code
		case wire.FrameError:
			tc.errText = string(p)
		default:
			tc.t.Fatalf("unexpected frame %d", typ)
		}
		if (tc.exit != nil || tc.errText != "") && !done() {
			tc.t.Fatalf("the terminal ended (exit %v, error %q) without %s; stdout %q", tc.exit, tc.errText, what, tc.stdout.String())
		}
	}
}

func (tc *termConn) sees(text string) {
	tc.t.Helper()
	tc.until(text, func() bool { return strings.Contains(tc.stdout.String(), text) })
}

func (tc *termConn) exits(code int) {
	tc.t.Helper()
	tc.until("the exit", func() bool { return tc.exit != nil })
	if *tc.exit != code {
		tc.t.Errorf("exit code %d, want %d; stdout %q, stderr %q", *tc.exit, code, tc.stdout.String(), tc.stderr.String())
	}
}

// Exec and attach through the server's stream tunnel to a job on a real
// agent: the agent pumps frames both ways and ends with the exit code.
func TestTerminalExecAndAttach(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		st := w.startAgent(t, "n1")
		j, err := w.jobs.Submit(w.admin, jobspec.Job{Name: "t", Queue: tenancy.DefaultQueue, Interactive: true, Services: []jobspec.Service{
			{Name: "sh", Command: []string{"sh", "-c", "echo early-bird; exec sh -i"}, TTY: true, CPU: 1, MemoryMiB: 64},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.db.Ent.Service.Update().Where(service.JobID(j.ID)).SetNodeID(st.NodeID).Exec(w.sys); err != nil {
			t.Fatal(err)
		}
		if err := w.bus.Publish(context.Background(), notify.TopicNode, st.NodeID); err != nil {
			t.Fatal(err)
		}
		w.waitFor(t, "the service running", func() bool {
			s, err := w.db.Ent.Service.Query().Where(service.JobID(j.ID)).Only(w.sys)
			return err == nil && string(s.Status) == "RUNNING"
		})
		// The agent dials its stream tunnel beside the control one: it may
		// still be connecting when the service runs.
		w.waitFor(t, "the node's stream tunnel", func() bool { return w.srv.HoldsStreams(st.NodeID) })
		open := func(o wire.StreamOpen) *termConn {
			t.Helper()
			o.JobID, o.Attempt, o.Service = j.ID, 1, "sh"
			c, err := w.srv.OpenStream(context.Background(), st.NodeID, o)
			if err != nil {
				t.Fatalf("open %s: %v", o.Kind, err)
			}
			t.Cleanup(func() { _ = c.Close() })
			return &termConn{t: t, c: c}
		}

		// Exec without a terminal: input, its end, both streams, the code.
		ex := open(wire.StreamOpen{Kind: wire.StreamExec, Command: []string{"sh", "-c", "cat; echo err >&2; exit 3"}})
		ex.send(wire.FrameStdin, []byte("hello\n"))
		ex.send(wire.FrameCloseStdin, nil)
		ex.exits(3)
		if ex.stdout.String() != "hello\n" || ex.stderr.String() != "err\n" {
			t.Errorf("exec: stdout %q, stderr %q", ex.stdout.String(), ex.stderr.String())
		}

		// Exec with a terminal of the asked size.
		tty := open(wire.StreamOpen{Kind: wire.StreamExec, Command: []string{"stty", "size"}, TTY: true, Rows: 21, Cols: 67})
		tty.exits(0)
		if got := tty.stdout.String(); got != "21 67\r\n" {
			t.Errorf("exec with tty printed %q", got)
		}

		// A command that does not exist is refused.
		_, err = w.srv.OpenStream(context.Background(), st.NodeID,
			wire.StreamOpen{Kind: wire.StreamExec, JobID: j.ID, Attempt: 1, Service: "sh", Command: []string{"levers9-no-such-command"}})
		var fe *fault.Error
		if !errors.As(err, &fe) || fe.Code != fault.BadUserInput {
			t.Errorf("unknown command: err = %v; want BAD_USER_INPUT", err)
		}

		// Attach: the replay, typing, a resize, the service's exit code.
		at := open(wire.StreamOpen{Kind: wire.StreamAttach, Rows: 24, Cols: 80})
		at.sees("early-bird\r\n")
		at.send(wire.FrameStdin, []byte("echo h\"\"i\r"))
		at.sees("hi\r\n")
		at.send(wire.FrameResize, wire.ResizePayload(31, 99))
		at.send(wire.FrameStdin, []byte("stty size\r"))
		at.sees("31 99\r\n")
		at.send(wire.FrameStdin, []byte("exit 5\r"))
		at.exits(5)
		ended := w.waitEnded(t, j.ID)
		if ended.Edges.Services[0].ExitCode == nil || *ended.Edges.Services[0].ExitCode != 5 {
			t.Errorf("service ended %+v", ended.Edges.Services[0])
		}
	})
}
