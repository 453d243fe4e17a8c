package graph_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/agent"
	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/graph"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/tunnel"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// TestRevokeNodeCredentialDisconnectsTheAgent: a tenant admin's
// revokeNodeCredential disconnects a connected agent at once; the agent
// cannot come back with its credential (it stops) nor with its invite
// (used). Members and other tenants' admins are refused and disconnect
// nothing.
func TestRevokeNodeCredentialDisconnectsTheAgent(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		e := newEnv(t, url, func(r *graph.Resolver) {
			// As `levers9 server` wires it: revokes signal the tunnels.
			r.NodeService.DB, r.NodeService.Bus, r.NodeService.Log = r.DB, r.JobService.Bus, r.Log
		})
		a, b := e.newTenant("acme"), e.newTenant("bravo")
		srv := &tunnel.Server{DB: e.db, Jobs: e.jobs, Logs: e.logs, Bus: e.bus, Log: slog.New(slog.DiscardHandler), Now: time.Now,
			HeartbeatInterval: 200 * time.Millisecond, Nodes: &nodes.Service{DB: e.db, Ent: e.db.Ent, Bus: e.bus, Now: time.Now}}
		mux := http.NewServeMux()
		srv.Routes(mux)
		hs := httptest.NewServer(mux)
		t.Cleanup(hs.Close)

		var inv struct{ CreateNodeInvite struct{ Code string } }
		r := e.gql(a.adminToken, `mutation { createNodeInvite(nodeName: "gpu-1") { code } }`, nil)
		r.ok(t)
		r.decode(t, &inv)
		dir := t.TempDir()
		st, err := agent.Join(context.Background(), agent.JoinConfig{Server: hs.URL, Invite: inv.CreateNodeInvite.Code, StateDir: dir,
			Inventory: wire.Inventory{CPUs: 2, MemoryMiB: 1024}})
		if err != nil {
			t.Fatal(err)
		}
		rt, err := runtime.NewProcess(runtime.ProcessConfig{Root: filepath.Join(dir, "jobs"), StopGrace: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		connected := make(chan struct{}, 8)
		done := make(chan error, 1)
		go func() {
			done <- agent.Run(ctx, agent.Config{StateDir: dir, Inventory: wire.Inventory{CPUs: 2, MemoryMiB: 1024}, Runtime: rt,
				OnConnect: func() { connected <- struct{}{} }})
		}()
		select {
		case <-connected:
		case <-time.After(30 * time.Second):
			t.Fatal("the agent did not connect")
		}

		for _, tc := range []struct {
			name, token, code string
		}{
			{"member", a.memberToken, "FORBIDDEN"},
			{"other tenant's admin", b.adminToken, "NOT_FOUND"},
			{"anonymous", "", "UNAUTHENTICATED"},
		} {
			for _, m := range []string{`mutation($id: ID!) { revokeNodeCredential(id: $id) { id } }`, `mutation($id: ID!) { deleteNode(id: $id) }`} {
				if got := e.gql(tc.token, m, vars{"id": st.NodeID}).code(); got != tc.code {
					t.Errorf("%s: %s: code %q; want %s", tc.name, m, got, tc.code)
				}
			}
		}
		select {
		case err := <-done:
			t.Fatalf("a refused revoke ended the agent: %v", err)
		case <-time.After(500 * time.Millisecond):
		}

		var out struct {
			RevokeNodeCredential struct{ Name, Status string }
		}
		r = e.gql(a.adminToken, `mutation($id: ID!) { revokeNodeCredential(id: $id) { name status } }`, vars{"id": st.NodeID})
		r.ok(t)
		r.decode(t, &out)
		if out.RevokeNodeCredential.Name != "gpu-1" || out.RevokeNodeCredential.Status != "OFFLINE" {
			t.Errorf("revoked node = %+v; want gpu-1, OFFLINE", out.RevokeNodeCredential)
		}
		// The signal, not the 30 s resync, closes the tunnel.
		select {
		case err := <-done:
			if !errors.Is(err, agent.ErrCredentialRefused) {
				t.Fatalf("the agent ended with %v; want its credential refused", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("the agent was not disconnected")
		}
		_, err = agent.Join(context.Background(), agent.JoinConfig{Server: hs.URL, Invite: inv.CreateNodeInvite.Code, StateDir: t.TempDir(),
			Inventory: wire.Inventory{CPUs: 2, MemoryMiB: 1024}})
		if err == nil || !strings.Contains(err.Error(), "used already") {
			t.Errorf("joining again with the used invite: %v; want it refused as used", err)
		}
		sys := viewer.SystemContext(context.Background())
		if n := e.db.Ent.Node.GetX(sys, st.NodeID); n.Status != node.StatusOffline {
			t.Errorf("the revoked node is %s; want offline", n.Status)
		}
	})
}

// TestDeleteNode: deleteNode refuses, in words, a node with a placed
// service or a node storage, and removes an idle one, which then is not
// found.
func TestDeleteNode(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		e := newEnv(t, url)
		a := e.newTenant("acme")
		sys := viewer.SystemContext(context.Background())
		tn := &fixture.Tenant{DB: e.db, Ent: a.ent, ID: a.ent.ID}
		busy := tn.AddNode(t, fixture.Node{Name: "busy"})
		idle := tn.AddNode(t, fixture.Node{Name: "idle"})
		holder := tn.AddNode(t, fixture.Node{Name: "holder"})
		tn.AddStorage(t, fixture.Storage{Name: "scratch", Kind: storage.KindNode, Path: "/data", NodeID: holder.ID})
		var job struct{ SubmitJob struct{ ID string } }
		r := e.gql(a.memberToken, `mutation { submitJob(spec: {queue: "default", services: [{name: "main", command: ["true"]}]}) { id } }`, nil)
		r.ok(t)
		r.decode(t, &job)
		if err := e.db.Ent.Service.Update().SetNodeID(busy.ID).Exec(sys); err != nil {
			t.Fatal(err)
		}

		const del = `mutation($id: ID!) { deleteNode(id: $id) }`
		for _, tc := range []struct{ id, words string }{
			{busy.ID, "node busy still has 1 service(s) placed on it; drain it"},
			{holder.ID, `node holder holds the node storage "scratch"`},
		} {
			r := e.gql(a.adminToken, del, vars{"id": tc.id})
			if r.code() != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message, tc.words) {
				t.Errorf("deleteNode(%s): %+v; want BAD_USER_INPUT saying %q", tc.id, r.Errors, tc.words)
			}
		}
		var out struct{ DeleteNode string }
		r = e.gql(a.adminToken, del, vars{"id": idle.ID})
		r.ok(t)
		r.decode(t, &out)
		if out.DeleteNode != idle.ID {
			t.Errorf("deleteNode returned %q; want %s", out.DeleteNode, idle.ID)
		}
		if got := e.gql(a.adminToken, del, vars{"id": idle.ID}).code(); got != "NOT_FOUND" {
			t.Errorf("deleting it again: %q; want NOT_FOUND", got)
		}
		if n, err := e.db.Ent.Node.Query().Count(sys); err != nil || n != 2 {
			t.Errorf("%d nodes left, %v; want 2", n, err)
		}
	})
}
