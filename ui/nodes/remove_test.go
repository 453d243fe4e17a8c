package nodes_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/admin/admintest"
	"github.com/levers9/levers9/ui/nodes"
)

// TestRemoveFromNodesPage: a tenant admin reaches the removal page from
// the node's row, revokes its credential and removes it; the page says,
// before any post, why a node with a placed service cannot go. Members
// are refused, other tenants' admins find nothing, a post without the
// CSRF token changes nothing.
func TestRemoveFromNodesPage(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := admintest.New(t, dbURL, nodes.Register)
		a, b := e.NewTenant("acme"), e.NewTenant("other")
		sys := viewer.SystemContext(context.Background())
		_, hash := auth.NewSecret()
		n := e.Ent.Node.Create().SetTenantID(a.Ent.ID).SetName("gpu-1").SetStatus(node.StatusOnline).SetCredentialHash(hash).SaveX(sys)
		busy := e.Ent.Node.Create().SetTenantID(a.Ent.ID).SetName("busy").SetStatus(node.StatusOnline).SaveX(sys)
		e.Ent.Storage.Create().SetTenantID(a.Ent.ID).SetName("scratch").SetKind(storage.KindNode).SetPath("/data").SetNodeID(busy.ID).SaveX(sys)
		page := "/nodes/" + n.ID + "/remove"

		member := e.SignIn(a.Member.Email)
		member.Get("/nodes").Want(t, http.StatusOK).Lacks(t, page)
		member.Get(page).Want(t, http.StatusForbidden)
		member.Post("/nodes/"+n.ID+"/revoke-credential", nil).Want(t, http.StatusForbidden)
		member.Post(page, nil).Want(t, http.StatusForbidden)
		stranger := e.SignIn(b.Admin.Email)
		stranger.Get(page).Want(t, http.StatusNotFound)
		stranger.Post("/nodes/"+n.ID+"/revoke-credential", nil).Want(t, http.StatusNotFound)
		stranger.Post(page, nil).Want(t, http.StatusNotFound)
		admin := e.SignIn(a.Admin.Email)
		admin.Post("/nodes/"+n.ID+"/revoke-credential", url.Values{"csrf": {"forged"}}).Want(t, http.StatusForbidden)
		if got := e.Ent.Node.GetX(sys, n.ID); got.CredentialHash != hash {
			t.Fatal("a refused request revoked the credential")
		}

		admin.Get("/nodes").Want(t, http.StatusOK).Contains(t, page)
		admin.Get(page).Want(t, http.StatusOK).Contains(t, "Revoke the credential of gpu-1", "Remove gpu-1")
		admin.Post("/nodes/"+n.ID+"/revoke-credential", nil).Want(t, http.StatusOK).
			Contains(t, "The credential of node gpu-1 is revoked")
		if got := e.Ent.Node.GetX(sys, n.ID); got.CredentialHash != "" || got.Status != node.StatusOffline {
			t.Fatalf("after the revoke: %+v; want no credential, offline", got)
		}
		admin.Get(page).Want(t, http.StatusOK).Contains(t, "revoked already")
		admin.Post(page, nil).Want(t, http.StatusOK).Contains(t, "Node gpu-1 is removed.")
		if _, err := e.Ent.Node.Get(sys, n.ID); !ent.IsNotFound(err) {
			t.Fatalf("the removed node: %v", err)
		}
		busyPage := "/nodes/" + busy.ID + "/remove"
		admin.Get(busyPage).Want(t, http.StatusOK).
			Contains(t, `It cannot be removed now: node busy holds the node storage &#34;scratch&#34;`).Lacks(t, "Remove busy")
		admin.Post(busyPage, nil).Want(t, http.StatusConflict).Contains(t, "It cannot be removed now")
		if _, err := e.Ent.Node.Get(sys, busy.ID); err != nil {
			t.Fatalf("a refused removal: %v", err)
		}
	})
}
