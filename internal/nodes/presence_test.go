package nodes_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/wire"
)

// TestPresence: a connecting agent puts its node online with its inventory
// and version; heartbeats keep it so, and bring it back when liveness had
// marked it offline. Each time its capacity may have changed, the node's
// queues are signalled and asked to be scheduled; a heartbeat of a node
// already online asks nothing. A hello with an inventory no machine has is
// refused and writes nothing.
func TestPresence(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := context.Background()
		var mu sync.Mutex
		var asked []string
		w.nodes.CapacityChanged = func(_ context.Context, id string) error {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, id)
			return nil
		}
		takeAsked := func() []string {
			mu.Lock()
			defer mu.Unlock()
			out := asked
			asked = nil
			return out
		}
		code, _ := w.invite(t, "", time.Hour)
		res, err := w.nodes.Join(ctx, wire.JoinRequest{Invite: code, Name: "n1", Inventory: wire.Inventory{CPUs: 1, MemoryMiB: 64}})
		if err != nil {
			t.Fatal(err)
		}
		id := res.NodeID
		defaultQueue := w.db.Ent.Queue.Query().Where(queue.Name(tenancy.DefaultQueue)).OnlyIDX(w.sys)
		woken, unsubscribe := w.bus.Subscribe(notify.TopicQueue, defaultQueue)
		defer unsubscribe()
		// The node's own signal (the dashboard's live nodes page).
		nodeWoken, unsubscribeNode := w.bus.Subscribe(notify.TopicNode, id)
		defer unsubscribeNode()
		// signalled waits for the queue's signal (PostgreSQL delivers it
		// through LISTEN, a moment later), or reports none within a while.
		signalled := func() bool {
			select {
			case <-woken:
				return true
			case <-time.After(2 * time.Second):
				return false
			}
		}

		connected := w.now
		reported := wire.Inventory{CPUs: 16, MemoryMiB: 65536, Runtime: "docker",
			GPUs: []wire.GPU{{Type: "H100", Count: 2, Devices: []string{"GPU-a", "GPU-b"}}}}
		if err := w.nodes.Connected(ctx, id, reported, "v1.2.3"+strings.Repeat("x", 200), connected); err != nil {
			t.Fatal(err)
		}
		n := w.db.Ent.Node.GetX(w.sys, id)
		if n.Status != node.StatusOnline || n.Inventory.CPUs != 16 || n.Inventory.Runtime != "docker" ||
			len(n.Inventory.GPUs) != 1 || len(n.Inventory.GPUs[0].Devices) != 2 ||
			len(n.AgentVersion) != 128 || !strings.HasPrefix(n.AgentVersion, "v1.2.3") ||
			n.LastHeartbeatAt == nil || !n.LastHeartbeatAt.Equal(connected) {
			t.Fatalf("connected node = %+v; want online, the reported inventory, the version cut to 128 bytes, a heartbeat at %v", n, connected)
		}
		if !signalled() {
			t.Error("connecting did not signal the node's queue")
		}
		select {
		case <-nodeWoken:
		case <-time.After(2 * time.Second):
			t.Error("connecting did not signal the node")
		}
		if got := takeAsked(); len(got) != 1 || got[0] != id {
			t.Errorf("connecting asked to schedule %v; want [%s]", got, id)
		}

		beat := connected.Add(5 * time.Second)
		back, err := w.nodes.Heartbeat(ctx, id, beat)
		if err != nil || back {
			t.Fatalf("heartbeat of an online node: back %v, %v", back, err)
		}
		if n := w.db.Ent.Node.GetX(w.sys, id); n.Status != node.StatusOnline || !n.LastHeartbeatAt.Equal(beat) {
			t.Errorf("after a heartbeat: %s, last %v; want online, %v", n.Status, n.LastHeartbeatAt, beat)
		}
		if got := takeAsked(); len(got) != 0 {
			t.Errorf("a heartbeat of an online node asked to schedule %v", got)
		}

		w.db.Ent.Node.UpdateOneID(id).SetStatus(node.StatusOffline).ExecX(w.sys) // as liveness would
		beat = beat.Add(time.Minute)
		back, err = w.nodes.Heartbeat(ctx, id, beat)
		if err != nil || !back {
			t.Fatalf("heartbeat of an offline node: back %v, %v; want back", back, err)
		}
		if n := w.db.Ent.Node.GetX(w.sys, id); n.Status != node.StatusOnline || !n.LastHeartbeatAt.Equal(beat) {
			t.Errorf("back: %s, last %v; want online, %v", n.Status, n.LastHeartbeatAt, beat)
		}
		if !signalled() {
			t.Error("coming back did not signal the node's queue")
		}
		if got := takeAsked(); len(got) != 1 || got[0] != id {
			t.Errorf("coming back asked to schedule %v; want [%s]", got, id)
		}

		before := w.db.Ent.Node.GetX(w.sys, id)
		err = w.nodes.Connected(ctx, id, wire.Inventory{CPUs: 1 << 20}, "v2", beat.Add(time.Second))
		var no *nodes.Refusal
		if !errors.As(err, &no) || no.Code != nodes.BadInventory {
			t.Fatalf("absurd inventory: %v; want BAD_INVENTORY", err)
		}
		if n := w.db.Ent.Node.GetX(w.sys, id); n.AgentVersion != before.AgentVersion || n.Inventory.CPUs != 16 ||
			!n.LastHeartbeatAt.Equal(beat) {
			t.Errorf("a refused hello wrote the node: %+v", n)
		}
	})
}
