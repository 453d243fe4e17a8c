package tunnel_test

import (
	"context"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/wire"
)

// A file operation asked of a node whose agent has connected but not yet
// said hello waits for the handshake: the agent's first message is its
// welcome, never the operation (which it would take as a broken handshake
// and hang up; CI once saw that).
func TestFileOpsWaitForTheWelcome(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		nodeID, cred := w.rawNode(t, "n1")
		a := w.dialRaw(t, cred)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// Not a timing the test asserts: the operation is asked while the
		// agent is silent, and the order of what it then reads is checked.
		time.Sleep(100 * time.Millisecond)
		asked := make(chan error, 1)
		go func() {
			_, err := w.srv.NodeDriver(nodeID, "/srv").Stat(ctx, "b", "k")
			asked <- err
		}()
		time.Sleep(100 * time.Millisecond)
		a.write(0, wire.Hello{NodeID: nodeID, AgentVersion: "test", Inventory: wire.Inventory{CPUs: 4, MemoryMiB: 1024}})
		if first := a.read(); first.Kind() != (wire.Welcome{}).Kind() {
			t.Fatalf("the agent's first message is %s, want its welcome", first.Kind())
		}
		for {
			if _, ok := a.read().(wire.FileOp); ok {
				break // asked after the welcome
			}
		}
		cancel()
		<-asked
	})
}

// The welcome tells the agent how long it may go without reaching the
// server before it freezes its jobs (shorter than TTL plus grace).
func TestWelcomeSaysWhenToFence(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		w.srv.FenceAfter = 26250 * time.Millisecond
		nodeID, cred := w.rawNode(t, "n1")
		a := w.dialRaw(t, cred)
		a.write(0, wire.Hello{NodeID: nodeID, AgentVersion: "test", Inventory: wire.Inventory{CPUs: 4, MemoryMiB: 1024}})
		welcome, ok := a.read().(wire.Welcome)
		if !ok || welcome.FenceAfter() != 26250*time.Millisecond {
			t.Fatalf("welcome %+v, want fenceAfterMs 26250", welcome)
		}
	})
}
