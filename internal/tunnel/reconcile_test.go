package tunnel_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/tunnel"
	"github.com/levers9/levers9/internal/wire"
)

// rawNode joins a node without running an agent and returns its ID and
// credential.
func (w *world) rawNode(t *testing.T, name string) (string, string) {
	t.Helper()
	code, _ := w.invite(t, nil)
	status, body := w.joinRaw(t, map[string]any{"invite": code, "name": name, "inventory": map[string]any{"cpus": 4, "memoryMiB": 1024}})
	if status != http.StatusOK {
		t.Fatalf("join: %d %v", status, body)
	}
	return body["nodeId"].(string), body["credential"].(string)
}

// running submits a job with retries on nodeID and marks it running, as if
// an agent had started it.
func (w *world) running(t *testing.T, nodeID string, retries int) string {
	t.Helper()
	j, err := w.jobs.Submit(w.admin, jobspec.Job{Name: "r", Queue: tenancy.DefaultQueue, Retries: retries,
		Services: []jobspec.Service{{Name: "main", Command: []string{"sleep", "600"}, CPU: 1, MemoryMiB: 64}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.db.Ent.Service.Update().Where(service.JobID(j.ID)).SetNodeID(nodeID).SetDispatchedAt(time.Now()).Exec(w.sys); err != nil {
		t.Fatal(err)
	}
	if err := w.jobs.MarkRunning(context.Background(), j.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	return j.ID
}

// TestLiveness: a silent node goes offline after the TTL; after the grace
// its running jobs fail with "node lost", or are requeued when they asked
// for retries.
func TestLiveness(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		nodeID, _ := w.rawNode(t, "n1")
		last := time.Now()
		if err := w.db.Ent.Node.UpdateOneID(nodeID).SetStatus(node.StatusOnline).SetLastHeartbeatAt(last).Exec(w.sys); err != nil {
			t.Fatal(err)
		}
		plain := w.running(t, nodeID, 0)
		retried := w.running(t, nodeID, 1)
		placed := w.runOn(t, nodeID, jobspec.Service{Name: "main", Command: []string{"true"}, CPU: 1, MemoryMiB: 64}).ID
		now := last
		l := &tunnel.Liveness{DB: w.db, Jobs: w.jobs, Bus: w.bus, Log: w.log, Now: func() time.Time { return now },
			TTL: 30 * time.Second, Grace: time.Minute}
		sweep := func(at time.Duration) tunnel.SweepResult {
			now = last.Add(at)
			res, err := l.Sweep(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		if res := sweep(10 * time.Second); res != (tunnel.SweepResult{}) {
			t.Fatalf("within the TTL: %+v", res)
		}
		if res := sweep(31 * time.Second); res.Offline != 1 || res.Failed+res.Requeued != 0 {
			t.Fatalf("past the TTL: %+v", res)
		}
		if n, _ := w.db.Ent.Node.Get(w.sys, nodeID); n.Status != node.StatusOffline {
			t.Fatalf("node is %s", n.Status)
		}
		if res := sweep(80 * time.Second); res.Failed+res.Requeued != 0 {
			t.Fatalf("within the grace: %+v", res)
		}
		if res := sweep(91 * time.Second); res.Failed != 1 || res.Requeued != 2 {
			t.Fatalf("past the grace: %+v", res)
		}
		j, _ := w.db.Ent.Job.Get(w.sys, plain)
		if j.Status != job.StatusError || j.StatusReason != tunnel.ReasonNodeLost {
			t.Errorf("job without retries: %s %q", j.Status, j.StatusReason)
		}
		j, _ = w.db.Ent.Job.Query().Where(job.ID(retried)).WithServices().Only(w.sys)
		if j.Status != job.StatusPending || j.Attempt != 2 || j.StartedAt != nil || j.Edges.Services[0].NodeID != "" || j.Edges.Services[0].DispatchedAt != nil {
			t.Errorf("job with retries: %s attempt %d services %+v", j.Status, j.Attempt, j.Edges.Services[0])
		}
		j, _ = w.db.Ent.Job.Query().Where(job.ID(placed)).WithServices().Only(w.sys)
		if j.Status != job.StatusPending || j.Attempt != 1 || j.Edges.Services[0].NodeID != "" {
			t.Errorf("placed job: %s attempt %d node %q", j.Status, j.Attempt, j.Edges.Services[0].NodeID)
		}
		if res := sweep(200 * time.Second); res != (tunnel.SweepResult{}) {
			t.Errorf("second sweep changed things: %+v", res)
		}
	})
}

// TestReconcile: an agent that comes back without a job the server thinks
// it runs gets it failed; a job it reports that the server never gave it is
// stopped; reports about such jobs are ignored.
func TestReconcile(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		nodeID, cred := w.rawNode(t, "n1")
		lost := w.running(t, nodeID, 0)
		kept := w.running(t, nodeID, 0)

		ctx, cancel := context.WithTimeout(context.Background(), hang)
		defer cancel()
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(w.http.URL, "http")+"/agent",
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + cred}}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		send := func(m wire.Msg) {
			b, err := wire.Encode(m)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Write(ctx, websocket.MessageText, b); err != nil {
				t.Fatal(err)
			}
		}
		read := func() wire.Msg {
			_, b, err := c.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			m, err := wire.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		now := time.Now()
		send(wire.Hello{NodeID: nodeID, AgentVersion: "test", Inventory: wire.Inventory{CPUs: 4, MemoryMiB: 1024}, Running: []wire.RunningService{
			{JobID: kept, Service: "main", StartedAt: now},
			{JobID: "job_stranger", Service: "main", StartedAt: now},
		}})
		if _, ok := read().(wire.Welcome); !ok {
			t.Fatal("no welcome")
		}
		var stops []string
		var rec *wire.Reconcile
		for rec == nil {
			switch m := read().(type) {
			case wire.Stop:
				stops = append(stops, m.JobID)
			case wire.Reconcile:
				rec = &m
			}
		}
		if len(stops) != 1 || stops[0] != "job_stranger" {
			t.Errorf("stops = %v; want the stranger", stops)
		}
		if len(rec.Running) != 1 || rec.Running[0].JobID != kept {
			t.Errorf("reconcile = %+v; want only %s", rec.Running, kept)
		}
		j, _ := w.db.Ent.Job.Get(w.sys, lost)
		if j.Status != job.StatusError || j.StatusReason != tunnel.ReasonLostOnRestart {
			t.Errorf("lost job: %s %q", j.Status, j.StatusReason)
		}
		// Reports about a job never given are ignored, not fatal.
		code := 0
		send(wire.StateChange{JobID: "job_stranger", Service: "main", State: wire.StateExited, ExitCode: &code, Time: now})
		send(wire.StateChange{JobID: kept, Service: "main", State: wire.StateExited, ExitCode: &code, Time: now})
		w.waitFor(t, "kept job to complete", func() bool {
			j, err := w.db.Ent.Job.Get(w.sys, kept)
			return err == nil && j.Status == job.StatusComplete
		})
	})
}

// A job lost with its node after its start was sent (services may have run
// and logged) is requeued as a new attempt, so the next run's lines never
// collide with the lost run's; one never sent keeps its attempt.
func TestLivenessSentStartIsANewAttempt(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		nodeID, _ := w.rawNode(t, "n1")
		last := time.Now()
		if err := w.db.Ent.Node.UpdateOneID(nodeID).SetStatus(node.StatusOnline).SetLastHeartbeatAt(last).Exec(w.sys); err != nil {
			t.Fatal(err)
		}
		sent := w.runOn(t, nodeID, jobspec.Service{Name: "main", Command: []string{"true"}, CPU: 1, MemoryMiB: 64}).ID
		if err := w.db.Ent.Service.Update().Where(service.JobID(sent)).SetDispatchedAt(last).Exec(w.sys); err != nil {
			t.Fatal(err)
		}
		l := &tunnel.Liveness{DB: w.db, Jobs: w.jobs, Bus: w.bus, Log: w.log, Now: func() time.Time { return last.Add(time.Hour) },
			TTL: 30 * time.Second, Grace: time.Minute}
		for range 2 { // offline, then past the grace
			if _, err := l.Sweep(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		j, err := w.db.Ent.Job.Get(w.sys, sent)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != job.StatusPending || j.Attempt != 2 {
			t.Fatalf("sent job: %s attempt %d %q; want PENDING attempt 2", j.Status, j.Attempt, j.StatusReason)
		}
	})
}
