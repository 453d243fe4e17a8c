package tunnel_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/tenancy"
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
		if j.Status != job.StatusError || j.StatusReason != jobs.ReasonLostOnRestart {
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
