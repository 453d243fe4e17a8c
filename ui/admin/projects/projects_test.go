package projects_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"testing"

	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/ent/group"
	"github.com/levers9/levers9/ent/project"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/admin/admintest"
	"github.com/levers9/levers9/ui/admin/projects"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// TestProjectsAndGrants: create a project with a member group, grant it
// tokens, see the balance; bad input is refused next to the field.
func TestProjectsAndGrants(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := admintest.New(t, dbURL, projects.Register)
		a := e.NewTenant("acme")
		sys := viewer.SystemContext(context.Background())
		everyone := e.Ent.Group.Query().Where(group.TenantID(a.Ent.ID)).OnlyX(sys)
		admin := e.SignIn(a.Admin.Email)

		res := admin.Post("/admin/projects", url.Values{"name": {"vision"}, "description": {"cameras"}, "groups": {everyone.ID}}).Want(t, http.StatusOK)
		pr := e.Ent.Project.Query().Where(project.TenantID(a.Ent.ID)).WithGroups().OnlyX(sys)
		if pr.Name != "vision" || len(pr.Edges.Groups) != 1 || res.URL != "/admin/projects/"+pr.ID {
			t.Fatalf("created %+v with %+v, at %s", pr, pr.Edges.Groups, res.URL)
		}
		res.Contains(t, "Project vision created.", `<strong id="balance">0</strong>`)

		admin.Post("/admin/projects/"+pr.ID+"/grant", url.Values{"tokens": {"1500.25"}, "reason": {"Q3 budget"}}).
			Want(t, http.StatusOK).Contains(t, "Granted 1500.25 tokens to vision.", `<strong id="balance">1500.25</strong>`, "Q3 budget")
		admin.Get("/admin/projects").Want(t, http.StatusOK).Contains(t, "vision", "cameras", "everyone", "1500.25")
		if b, _ := (&ledger.Service{DB: e.DB}).Balance(a.AdminCtx, ledger.Payer{ProjectID: pr.ID}); b != 1500*billing.Unit+billing.Unit/4 {
			t.Fatalf("balance %s", b)
		}

		// Members: unticking the group removes it.
		admin.Post("/admin/projects/"+pr.ID, url.Values{"name": {"vision2"}}).Want(t, http.StatusOK).Contains(t, "Project vision2 saved.")
		if pr = e.Ent.Project.Query().Where(project.ID(pr.ID)).WithGroups().OnlyX(sys); pr.Name != "vision2" || len(pr.Edges.Groups) != 0 {
			t.Fatalf("edited %+v with %+v", pr, pr.Edges.Groups)
		}

		for _, tc := range []struct{ tokens, reason, field string }{
			{"lots", "why", "tokens"}, {"0", "why", "tokens"}, {"1.0000001", "why", "tokens"}, {"5", "  ", "reason"},
		} {
			admin.Post("/admin/projects/"+pr.ID+"/grant", url.Values{"tokens": {tc.tokens}, "reason": {tc.reason}}).
				Want(t, http.StatusBadRequest).Contains(t, `id="grant-`+tc.field+`-errors"`)
		}
		for _, name := range []string{"", "bad name", "vision2"} {
			admin.Post("/admin/projects", url.Values{"name": {name}}).Want(t, http.StatusBadRequest).Contains(t, `id="project-name-errors"`)
		}
		if n := e.Ent.Charge.Query().Where(charge.KindEQ(charge.KindGrant)).CountX(sys); n != 1 {
			t.Fatalf("%d grants, want one", n)
		}
		if n := e.Ent.Project.Query().CountX(sys); n != 1 {
			t.Fatalf("%d projects, want one", n)
		}
	})
}

// TestProjectAccess: members get 403; another tenant's project is not
// found, cannot be granted to and keeps its name.
func TestProjectAccess(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := admintest.New(t, dbURL, projects.Register)
		a, b := e.NewTenant("acme"), e.NewTenant("other")
		sys := viewer.SystemContext(context.Background())
		ours := e.Ent.Project.Create().SetTenantID(a.Ent.ID).SetName("ours").SaveX(sys)
		theirs := e.Ent.Project.Create().SetTenantID(b.Ent.ID).SetName("theirs").SaveX(sys)

		member := e.SignIn(a.Member.Email)
		member.Get("/admin/projects").Want(t, http.StatusForbidden)
		member.Get("/admin/projects/"+ours.ID).Want(t, http.StatusForbidden)
		member.Post("/admin/projects", url.Values{"name": {"mine"}}).Want(t, http.StatusForbidden)
		member.Post("/admin/projects/"+ours.ID+"/grant", url.Values{"tokens": {"9"}, "reason": {"me"}}).Want(t, http.StatusForbidden)

		admin := e.SignIn(a.Admin.Email)
		admin.Get("/admin/projects").Want(t, http.StatusOK).Lacks(t, "theirs")
		admin.Get("/admin/projects/"+theirs.ID).Want(t, http.StatusNotFound)
		admin.Post("/admin/projects/"+theirs.ID, url.Values{"name": {"stolen"}}).Want(t, http.StatusNotFound)
		admin.Post("/admin/projects/"+theirs.ID+"/grant", url.Values{"tokens": {"9"}, "reason": {"gift"}}).Want(t, http.StatusNotFound)

		if e.Ent.Charge.Query().ExistX(sys) {
			t.Fatal("a grant was written")
		}
		if e.Ent.Project.GetX(sys, theirs.ID).Name != "theirs" || e.Ent.Project.Query().CountX(sys) != 2 {
			t.Fatal("projects changed")
		}
	})
}
