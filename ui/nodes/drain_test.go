package nodes_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/admin/admintest"
	"github.com/levers9/levers9/ui/nodes"
)

// TestDrainFromNodesPage: the page shows a draining node as such; its
// tenant's admins drain and undrain it there, nobody else can.
func TestDrainFromNodesPage(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := admintest.New(t, dbURL, nodes.Register)
		a, b := e.NewTenant("acme"), e.NewTenant("other")
		sys := viewer.SystemContext(context.Background())
		n := e.Ent.Node.Create().SetTenantID(a.Ent.ID).SetName("gpu-1").SetStatus(node.StatusOnline).SaveX(sys)
		drained := func() bool { return e.Ent.Node.GetX(sys, n.ID).Drain }
		path := "/nodes/" + n.ID + "/drain"

		e.SignIn(a.Member.Email).Post(path, url.Values{"drain": {"true"}}).Want(t, http.StatusForbidden)
		e.SignIn(b.Admin.Email).Post(path, url.Values{"drain": {"true"}}).Want(t, http.StatusNotFound)
		admin := e.SignIn(a.Admin.Email)
		admin.Post(path, url.Values{"drain": {"maybe"}}).Want(t, http.StatusBadRequest)
		if drained() {
			t.Fatal("the node was drained by a refused request")
		}

		admin.Post(path, url.Values{"drain": {"true"}}).Want(t, http.StatusOK).Contains(t, "Node gpu-1 is draining", "Undrain node gpu-1")
		if !drained() {
			t.Fatal("the admin's drain did not store")
		}
		e.SignIn(a.Member.Email).Get("/nodes").Want(t, http.StatusOK).Contains(t, ">draining</span>").Lacks(t, "Undrain", path)
		admin.Post(path, url.Values{"drain": {"false"}}).Want(t, http.StatusOK).Contains(t, "takes new jobs again", "Drain node gpu-1")
		if drained() {
			t.Fatal("the admin's undrain did not store")
		}
	})
}
