package graph_test

import (
	"context"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/graph"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/viewer"
)

// TestRevokeNodeCredential: tenant admins revoke a node's credential (it
// goes offline, its credential gone); members and other tenants' admins
// are refused by both node mutations and change nothing. That the agent
// is disconnected at once is internal/tunnel's TestRevokeDisconnectsTheAgent
// (and e2e's TestBrowserRevokeAndRemoveNode, with the real binaries).
func TestRevokeNodeCredential(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		e := newEnv(t, url, func(r *graph.Resolver) {
			r.NodeService.DB, r.NodeService.Bus, r.NodeService.Log = r.DB, r.JobService.Bus, r.Log
		})
		a, b := e.newTenant("acme"), e.newTenant("bravo")
		tn := &fixture.Tenant{DB: e.db, Ent: a.ent, ID: a.ent.ID}
		n := tn.AddNode(t, fixture.Node{Name: "gpu-1"})
		sys := viewer.SystemContext(context.Background())
		if err := e.db.Ent.Node.UpdateOneID(n.ID).SetCredentialHash("h").SetStatus(node.StatusOnline).Exec(sys); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name, token, code string
		}{
			{"member", a.memberToken, "FORBIDDEN"},
			{"other tenant's admin", b.adminToken, "NOT_FOUND"},
			{"anonymous", "", "UNAUTHENTICATED"},
		} {
			for _, m := range []string{`mutation($id: ID!) { revokeNodeCredential(id: $id) { id } }`, `mutation($id: ID!) { deleteNode(id: $id) }`} {
				if got := e.gql(tc.token, m, vars{"id": n.ID}).code(); got != tc.code {
					t.Errorf("%s: %s: code %q; want %s", tc.name, m, got, tc.code)
				}
			}
		}
		if got := e.db.Ent.Node.GetX(sys, n.ID); got.Status != node.StatusOnline || got.CredentialHash == "" {
			t.Fatalf("refused mutations changed the node: %s, credential kept %v", got.Status, got.CredentialHash != "")
		}

		var out struct {
			RevokeNodeCredential struct{ Name, Status string }
		}
		r := e.gql(a.adminToken, `mutation($id: ID!) { revokeNodeCredential(id: $id) { name status } }`, vars{"id": n.ID})
		r.ok(t)
		r.decode(t, &out)
		if out.RevokeNodeCredential.Name != "gpu-1" || out.RevokeNodeCredential.Status != "OFFLINE" {
			t.Errorf("revoked node = %+v; want gpu-1, OFFLINE", out.RevokeNodeCredential)
		}
		if got := e.db.Ent.Node.GetX(sys, n.ID); got.Status != node.StatusOffline || got.CredentialHash != "" {
			t.Errorf("the revoked node is %s, credential kept %v; want offline without one", got.Status, got.CredentialHash != "")
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
