package admin_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent/group"
	"github.com/levers9/levers9/ent/project"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/admin"
	"github.com/levers9/levers9/ui/admin/adminkit"
	"github.com/levers9/levers9/ui/admin/admintest"
	"github.com/levers9/levers9/ui/nodes"
	"github.com/levers9/levers9/ui/superadmin"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// TestMemberForbidden: a member gets 403 on every admin page and form, on
// its own tenant's objects too, and the navigation offers no admin link;
// the admin reaches every section from the admin navigation.
func TestMemberForbidden(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := admintest.New(t, dbURL, admin.Register, nodes.Register)
		a := e.NewTenant("acme")
		sys := viewer.SystemContext(context.Background())
		q := e.Ent.Queue.Query().Where(queue.TenantID(a.Ent.ID)).OnlyX(sys)
		g := e.Ent.Group.Query().Where(group.TenantID(a.Ent.ID)).OnlyX(sys)
		p := e.Ent.Project.Create().SetTenantID(a.Ent.ID).SetName("p1").SaveX(sys)
		st := e.Ent.Storage.Query().Where(storage.TenantID(a.Ent.ID)).OnlyX(sys)
		gets := []string{"/admin", "/admin/queues", "/admin/queues/new", "/admin/queues/" + q.ID, "/admin/groups",
			"/admin/groups/" + g.ID, "/admin/users", "/admin/projects", "/admin/projects/" + p.ID, "/admin/storages",
			"/admin/settings", "/admin/tokens"}
		posts := []string{"/admin/queues", "/admin/queues/" + q.ID, "/admin/groups", "/admin/groups/" + g.ID + "/delete",
			"/admin/groups/" + g.ID + "/members", "/admin/users", "/admin/projects", "/admin/projects/" + p.ID,
			"/admin/projects/" + p.ID + "/grant", "/admin/storages", "/admin/buckets", "/admin/settings", "/admin/tokens",
			"/nodes/invites"}

		member := e.SignIn(a.Member.Email)
		for _, path := range gets {
			member.Get(path).Want(t, http.StatusForbidden).Contains(t, `id="error-message"`)
		}
		for _, path := range posts {
			member.Post(path, url.Values{"name": {"x"}, "storage": {st.ID}, "tokens": {"1"}, "reason": {"r"}}).Want(t, http.StatusForbidden)
		}
		member.Get("/nodes").Want(t, http.StatusOK).Lacks(t, `href="/admin"`)
		if e.Ent.Project.Query().Where(project.Name("x")).ExistX(sys) || e.Ent.Bucket.Query().ExistX(sys) || e.Ent.Charge.Query().ExistX(sys) {
			t.Fatal("a member's post wrote")
		}

		boss := e.SignIn(a.Admin.Email)
		res := boss.Get("/admin").Want(t, http.StatusOK)
		if res.URL != "/admin/queues" {
			t.Fatalf("/admin went to %s", res.URL)
		}
		res.Contains(t, `href="/admin"`, `href="/nodes"`)
		for _, s := range adminkit.Sections {
			page := boss.Get(s.Href).Want(t, http.StatusOK)
			page.Contains(t, `<a href="`+s.Href+`" aria-current="page"><strong>`+s.Label+`</strong></a>`)
			if strings.Count(page.Body, `aria-current="page"`) != 2 { // the top link Admin and the section
				t.Fatalf("%s marks %d current links", s.Href, strings.Count(page.Body, `aria-current="page"`))
			}
		}
	})
}

// TestSuperadminOutsideTenant: a superadmin who has not entered a tenant
// sees no tenant's admin pages or nodes (they show one tenant's objects):
// a page is sent to the tenant list with a notice saying why, a change is
// refused.
func TestSuperadminOutsideTenant(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := admintest.New(t, dbURL, admin.Register, nodes.Register, superadmin.Register)
		e.NewTenant("acme")
		sys := viewer.SystemContext(context.Background())
		hash, err := auth.HashPassword(admintest.Password)
		if err != nil {
			t.Fatal(err)
		}
		e.Ent.User.Create().SetEmail("root@ops.test").SetPasswordHash(hash).SetSuperadmin(true).SaveX(sys)
		root := e.SignIn("root@ops.test")
		for _, path := range []string{"/admin/queues", "/admin/settings", "/admin/tokens", "/nodes"} {
			res := root.Get(path).Want(t, http.StatusOK)
			if res.URL != "/superadmin" {
				t.Errorf("%s went to %s; want the tenant list", path, res.URL)
			}
			res.Contains(t, "Enter a tenant to see its "+path+" page")
		}
		root.Post("/nodes/invites", url.Values{"expiresHours": {"1"}}).Want(t, http.StatusForbidden)
		if e.Ent.NodeInvite.Query().ExistX(sys) {
			t.Fatal("an invite was made outside every tenant")
		}
	})
}
