package tunnel_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/logline"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/wire"
)

// rawAgent is a tunnel connection driven by hand, as an agent would.
type rawAgent struct {
	t   *testing.T
	ctx context.Context
	c   *websocket.Conn
	seq uint64
}

func (w *world) dialRaw(t *testing.T, cred string) *rawAgent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	t.Cleanup(cancel)
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(w.http.URL, "http")+"/agent",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + cred}}})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(wire.MaxMessageBytes)
	t.Cleanup(func() { c.CloseNow() })
	return &rawAgent{t: t, ctx: ctx, c: c}
}

func (a *rawAgent) read() wire.Msg {
	a.t.Helper()
	_, b, err := a.c.Read(a.ctx)
	if err != nil {
		a.t.Fatal(err)
	}
	m, err := wire.Decode(b)
	if err != nil {
		a.t.Fatal(err)
	}
	return m
}

// hello opens the session and returns the Stops and the Reconcile that
// follow the Welcome.
func (a *rawAgent) hello(h wire.Hello) ([]wire.Stop, wire.Reconcile) {
	a.t.Helper()
	a.write(0, h)
	if _, ok := a.read().(wire.Welcome); !ok {
		a.t.Fatal("no welcome")
	}
	var stops []wire.Stop
	for {
		switch m := a.read().(type) {
		case wire.Stop:
			stops = append(stops, m)
		case wire.Reconcile:
			return stops, m
		}
	}
}

func (a *rawAgent) write(seq uint64, m wire.Msg) {
	a.t.Helper()
	b, err := wire.EncodeSeq(seq, m)
	if err != nil {
		a.t.Fatal(err)
	}
	if err := a.c.Write(a.ctx, websocket.MessageText, b); err != nil {
		a.t.Fatal(err)
	}
}

// report sends m and waits until the server has applied it (its ack);
// other messages meanwhile are returned.
func (a *rawAgent) report(m wire.Msg) []wire.Msg {
	a.t.Helper()
	a.seq++
	a.write(a.seq, m)
	var other []wire.Msg
	for {
		got := a.read()
		if ack, ok := got.(wire.Ack); ok && ack.Seq == a.seq {
			if ack.Error != "" {
				a.t.Fatalf("report refused: %s", ack.Error)
			}
			return other
		}
		other = append(other, got)
	}
}

func lines(svc string, from, to int, at time.Time, text string) []wire.LogLine {
	var out []wire.LogLine
	for i := from; i <= to; i++ {
		out = append(out, wire.LogLine{Service: svc, Stream: wire.Stdout, Seq: uint64(i), Time: at.Add(time.Duration(i) * time.Millisecond), Text: fmt.Sprintf("%s %d", text, i)})
	}
	return out
}

// TestAttempts: a job requeued after its node was lost keeps the lines of
// each attempt apart, each numbered from 1; the reconnecting agent learns
// where the current attempt's log ends; late state reports of the first
// attempt change nothing, and its late lines, which the node that ran it
// kept while cut off, are stored with it (once: by seq).
func TestAttempts(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		nodeID, cred := w.rawNode(t, "n1")
		id := w.running(t, nodeID, 1)
		at := time.Now().UTC().Truncate(time.Second)

		a := w.dialRaw(t, cred)
		a.hello(wire.Hello{NodeID: nodeID, AgentVersion: "test", Inventory: wire.Inventory{CPUs: 4, MemoryMiB: 1024},
			Running: []wire.RunningService{{JobID: id, Service: "main", Attempt: 1, StartedAt: at}}})
		a.report(wire.Logs{JobID: id, Attempt: 1, Lines: lines("main", 1, 3, at, "first")})

		// The node goes silent past its grace: the job is requeued.
		l := &nodes.Liveness{DB: w.db, Jobs: w.jobs, Bus: w.bus, Log: w.log,
			Now: func() time.Time { return time.Now().Add(time.Hour) }, TTL: time.Second, Grace: time.Second,
			Heard: time.Now(), MaxGap: 2 * time.Hour}
		if res, err := l.Sweep(context.Background()); err != nil || res.Requeued != 1 {
			t.Fatalf("sweep = %+v, %v; want the job requeued", res, err)
		}
		// Placed on the same node again, it is sent as attempt 2.
		if err := w.db.Ent.Node.UpdateOneID(nodeID).SetStatus(node.StatusOnline).SetLastHeartbeatAt(time.Now()).Exec(w.sys); err != nil {
			t.Fatal(err)
		}
		if err := w.db.Ent.Service.Update().Where(service.JobID(id)).SetNodeID(nodeID).Exec(w.sys); err != nil {
			t.Fatal(err)
		}
		if err := w.bus.Publish(context.Background(), notify.TopicNode, nodeID); err != nil {
			t.Fatal(err)
		}
		var start wire.Start
		for start.JobID == "" {
			if m, ok := a.read().(wire.Start); ok {
				start = m
			}
		}
		if start.JobID != id || start.Attempt != 2 {
			t.Fatalf("start = %s attempt %d; want %s attempt 2", start.JobID, start.Attempt, id)
		}
		a.report(wire.StateChange{JobID: id, Attempt: 2, Service: "main", State: wire.StateRunning, Time: at})
		a.report(wire.Logs{JobID: id, Attempt: 2, Lines: lines("main", 1, 2, at.Add(time.Minute), "second")})

		// State reports of attempt 1 that arrive late change nothing; its
		// lines are kept.
		a.report(wire.StateChange{JobID: id, Attempt: 1, Service: "main", State: wire.StateFailed, Reason: "killed", Time: at})
		a.report(wire.Logs{JobID: id, Attempt: 1, Lines: lines("main", 4, 4, at, "first")})
		a.report(wire.Logs{JobID: id, Attempt: 1, Lines: lines("main", 3, 3, at, "stale")})
		// A batch with a line of a service the job does not have is refused
		// whole, whatever its first line names.
		a.report(wire.Logs{JobID: id, Attempt: 2, Lines: append(lines("main", 3, 3, at.Add(time.Minute), "mixed"),
			lines("ghost", 4, 4, at.Add(time.Minute), "forged")...)})
		j, err := w.db.Ent.Job.Query().Where(job.ID(id)).WithServices().Only(w.sys)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != job.StatusRunning || j.Attempt != 2 || j.Edges.Services[0].Status != service.StatusRunning {
			t.Fatalf("after a stale failure: job %s attempt %d service %s", j.Status, j.Attempt, j.Edges.Services[0].Status)
		}

		// A reconnecting agent that runs attempt 2 is told where its log
		// ends; one that still runs attempt 1 is told to stop it.
		a.c.Close(websocket.StatusNormalClosure, "")
		a = w.dialRaw(t, cred)
		stops, rec := a.hello(wire.Hello{NodeID: nodeID, AgentVersion: "test", Inventory: wire.Inventory{CPUs: 4, MemoryMiB: 1024},
			Running: []wire.RunningService{{JobID: id, Service: "main", Attempt: 2, StartedAt: at}}})
		wantLast := at.Add(time.Minute + 2*time.Millisecond)
		if len(stops) != 0 || len(rec.Running) != 1 || rec.Running[0].Attempt != 2 || rec.Running[0].LogSeq != 2 || !rec.Running[0].LastLine.Equal(wantLast) {
			t.Fatalf("stops %v, reconcile %+v; want attempt 2 kept with log seq 2, last line %v", stops, rec.Running, wantLast)
		}

		code := 0
		a.report(wire.StateChange{JobID: id, Attempt: 2, Service: "main", State: wire.StateExited, ExitCode: &code, Time: at})
		if j := w.waitEnded(t, id); j.Status != job.StatusComplete {
			t.Fatalf("job = %s %q; want COMPLETE", j.Status, j.StatusReason)
		}
		stored, err := w.db.Ent.LogLine.Query().Where(logline.JobID(id)).
			Order(logline.ByAttempt(), logline.BySeq()).All(w.sys)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range stored {
			got = append(got, fmt.Sprintf("%d/%d:%s", l.Attempt, l.Seq, l.Text))
		}
		want := []string{"1/1:first 1", "1/2:first 2", "1/3:first 3", "1/4:first 4", "2/1:second 1", "2/2:second 2"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("stored lines %q; want %q", got, want)
		}

		// An agent reporting a run of an attempt the job has left is told
		// to stop it.
		other := w.running(t, nodeID, 1)
		if err := w.db.Ent.Job.UpdateOneID(other).SetAttempt(2).Exec(w.sys); err != nil {
			t.Fatal(err)
		}
		a.c.Close(websocket.StatusNormalClosure, "")
		a = w.dialRaw(t, cred)
		stops, rec = a.hello(wire.Hello{NodeID: nodeID, AgentVersion: "test", Inventory: wire.Inventory{CPUs: 4, MemoryMiB: 1024},
			Running: []wire.RunningService{{JobID: other, Service: "main", Attempt: 1, StartedAt: at}}})
		if len(stops) != 1 || stops[0].JobID != other || len(rec.Running) != 0 {
			t.Fatalf("stops %v, reconcile %+v; want attempt 1 of %s stopped", stops, rec.Running, other)
		}
	})
}
