package tunnel_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/agent"
	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/wire"
)

// TestRevokeClosesStreamTunnel: a revoked credential closes the node's
// stream tunnel too (the signal, not a reconnect, ends it), and a new
// stream tunnel with the old credential is refused.
func TestRevokeClosesStreamTunnel(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		rw := newRunnerWorld(t, url)
		st, ys := rw.rawStreams(t)
		ns := &nodes.Service{DB: rw.db, Ent: rw.db.Ent, Bus: rw.bus, Log: rw.log, Now: time.Now}
		// Another node's signal leaves it open.
		if err := rw.bus.Publish(rw.sys, notify.TopicNode, st.NodeID+"-other"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ys.CloseChan():
			t.Fatal("the stream tunnel closed before any revoke")
		case <-time.After(300 * time.Millisecond):
		}
		if _, err := ns.RevokeCredential(rw.admin, st.NodeID); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ys.CloseChan():
		case <-time.After(15 * time.Second):
			t.Fatal("the stream tunnel stayed open after the revoke")
		}
		req, err := http.NewRequest(http.MethodGet, rw.http.URL+"/agent/streams", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+st.Credential)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("a stream tunnel with the revoked credential: %d; want 401", res.StatusCode)
		}
	})
}

// TestRevokeDisconnectsTheAgent: a revoked credential ends a connected
// agent's tunnel at once (the signal, not the periodic re-read), the agent
// stops with its credential refused, and its invite cannot bring it back
// (it is used).
func TestRevokeDisconnectsTheAgent(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		code, _ := w.invite(t, nil)
		dir := t.TempDir()
		inv := wire.Inventory{CPUs: 2, MemoryMiB: 1024}
		st, err := agent.Join(context.Background(), agent.JoinConfig{Server: w.http.URL, Invite: code, Name: "gpu-1", StateDir: dir, Inventory: inv})
		if err != nil {
			t.Fatal(err)
		}
		rt, err := runtime.NewProcess(runtime.ProcessConfig{Root: filepath.Join(dir, "jobs"), StopGrace: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- agent.Run(ctx, agent.Config{StateDir: dir, Inventory: inv, Runtime: rt, Log: w.log}) }()
		w.waitFor(t, "node online", func() bool {
			n, err := w.db.Ent.Node.Get(w.sys, st.NodeID)
			return err == nil && n.Status == node.StatusOnline
		})

		ns := &nodes.Service{DB: w.db, Ent: w.db.Ent, Bus: w.bus, Log: w.log, Now: time.Now}
		if _, err := ns.RevokeCredential(w.admin, st.NodeID); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if !errors.Is(err, agent.ErrCredentialRefused) {
				t.Fatalf("the agent ended with %v; want its credential refused", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("the agent was not disconnected")
		}
		_, err = agent.Join(context.Background(), agent.JoinConfig{Server: w.http.URL, Invite: code, StateDir: t.TempDir(), Inventory: inv})
		if err == nil || !strings.Contains(err.Error(), "used already") {
			t.Errorf("joining again with the used invite: %v; want it refused as used", err)
		}
		if n := w.db.Ent.Node.GetX(w.sys, st.NodeID); n.Status != node.StatusOffline {
			t.Errorf("the revoked node is %s; want offline", n.Status)
		}
	})
}

// TestWorkWakesCheckNoCredential: a node's wakes for new or changed work
// (several a job) do not re-read its credential; a revoke has a signal of
// its own (above), and the resync every 30 s catches a lost one.
func TestWorkWakesCheckNoCredential(t *testing.T) {
	t.Parallel()
	w := newWorld(t, dbtest.SQLiteURL(t))
	st := w.startAgent(t, "n1")
	since, err := w.db.Mark(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		w.waitEnded(t, w.runOn(t, st.NodeID, jobspec.Service{Name: "main", Command: []string{"true"}, CPU: 1, MemoryMiB: 64}).ID)
	}
	stmts, err := since(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dispatched := false
	for _, q := range stmts {
		if strings.Contains(q, "`nodes`.`credential_hash` = ?") && strings.Contains(q, "`nodes`.`id` = ?") {
			t.Errorf("a work wake read the node's credential: %s", q)
		}
		dispatched = dispatched || strings.Contains(q, "`dispatched_at`")
	}
	if !dispatched {
		t.Fatalf("no dispatch among the statements: the check would prove little; %q", stmts)
	}
}
