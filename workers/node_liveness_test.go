package workers_test

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/inventory"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/workers"
)

// TestNodeLivenessSweepFollowsItsCheck: a sweep acts on the hearing its
// check found (it may run on a replica that made no check), and a sweep
// that waited in the queue longer than the hearing's gap does nothing: the
// control plane may have been down meanwhile.
func TestNodeLivenessSweepFollowsItsCheck(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		n := w.tn.AddNode(t, fixture.Node{Name: "n1", Inventory: inventory.Inventory{CPUs: 4, MemoryMiB: 1024}, Queues: []string{w.queue}})
		last := time.Now()
		if err := w.db.Ent.Node.UpdateOneID(n.ID).SetStatus(node.StatusOnline).SetLastHeartbeatAt(last).Exec(w.sys); err != nil {
			t.Fatal(err)
		}
		now := last.Add(time.Minute)
		// This replica made no check: on its own it would start hearing now.
		l := &nodes.Liveness{DB: w.db, Log: fixture.Log(), Now: func() time.Time { return now }, TTL: 30 * time.Second, Grace: time.Minute}
		worker := &workers.NodeLivenessWorker{Liveness: l, Log: fixture.Log()}
		work := func(args workers.NodeLivenessArgs) {
			t.Helper()
			if err := worker.Work(context.Background(), &river.Job[workers.NodeLivenessArgs]{Args: args}); err != nil {
				t.Fatal(err)
			}
		}
		status := func() node.Status { return w.db.Ent.Node.GetX(w.sys, n.ID).Status }
		// Checked on another replica long ago, hearing since before the
		// heartbeat: stale, skipped.
		work(workers.NodeLivenessArgs{Heard: last.Add(-time.Hour), CheckedAt: now.Add(-time.Minute)})
		if s := status(); s != node.StatusOnline {
			t.Fatalf("a stale sweep marked the node %s", s)
		}
		// Checked just now, hearing since the heartbeat: the node is silent.
		work(workers.NodeLivenessArgs{Heard: last, CheckedAt: now.Add(-time.Second)})
		if s := status(); s != node.StatusOffline {
			t.Fatalf("a fresh sweep left the node %s", s)
		}
	})
}
