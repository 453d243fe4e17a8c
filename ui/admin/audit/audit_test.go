package audit_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/admin"
	"github.com/levers9/levers9/ui/admin/admintest"
	uiaudit "github.com/levers9/levers9/ui/admin/audit"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// A superadmin visits a tenant and changes things there: the tenant's
// admin sees each change on the audit page, newest first, with the
// superadmin's email, a page at a time; a member gets 403 and another
// tenant's admin sees none of it.
func TestAuditPage(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := admintest.New(t, dbURL, admin.Register)
		a := e.NewTenant("visited")
		b := e.NewTenant("elsewhere")
		sys := viewer.SystemContext(context.Background())
		hash, err := auth.HashPassword(admintest.Password)
		if err != nil {
			t.Fatal(err)
		}
		root := e.Ent.User.Create().SetEmail("root@ops.test").SetPasswordHash(hash).SetSuperadmin(true).SaveX(sys)
		if _, err := auth.IssueToken(sys, e.Ent, root, "root", "", ""); err != nil {
			t.Fatal(err)
		}
		tok := root.QueryAPITokens().OnlyX(sys)
		outside := viewer.NewContext(context.Background(), &viewer.Viewer{UserID: root.ID, Superadmin: true, TokenID: tok.ID})
		if _, err := e.Tenancy.EnterTenant(outside, a.Ent.ID); err != nil {
			t.Fatal(err)
		}
		env, err := tenancy.MainEnvironmentID(sys, e.Ent, a.Ent.ID)
		if err != nil {
			t.Fatal(err)
		}
		inside := viewer.NewContext(context.Background(), &viewer.Viewer{UserID: root.ID, Superadmin: true, Admin: true,
			TenantID: a.Ent.ID, EnvironmentID: env, TokenID: tok.ID})
		// More changes than a page holds, each through plain ent: the
		// audit needs no cooperation from whoever writes.
		n := uiaudit.PageSize + 5
		for i := range n {
			e.Ent.Group.Create().SetName(fmt.Sprintf("visitors-%02d", i)).SaveX(inside)
		}
		// The tenant admin's own changes are not in it.
		e.Ent.Group.Create().SetName("locals").SaveX(a.AdminCtx)
		if err := e.Tenancy.LeaveTenant(inside); err != nil {
			t.Fatal(err)
		}

		boss := e.SignIn(a.Admin.Email)
		first := boss.Get("/admin/audit").Want(t, http.StatusOK).
			Contains(t, "root@ops.test", "tenant.leave", "group.create", fmt.Sprintf("%d events", n+2), `rel="next"`).
			Lacks(t, "tenant.enter")
		if strings.Count(first.Body, `id="event-`) != uiaudit.PageSize {
			t.Errorf("the first page shows %d events, want %d", strings.Count(first.Body, `id="event-`), uiaudit.PageSize)
		}
		next := regexp.MustCompile(`href="([^"]+)" rel="next"`).FindStringSubmatch(first.Body)
		if next == nil {
			t.Fatalf("no next page link in\n%s", first.Body)
		}
		second := boss.Get(strings.ReplaceAll(next[1], "&amp;", "&")).Want(t, http.StatusOK).
			Contains(t, "tenant.enter", "root@ops.test")
		if got := strings.Count(second.Body, `id="event-`); got != n+2-uiaudit.PageSize {
			t.Errorf("the second page shows %d events, want %d", got, n+2-uiaudit.PageSize)
		}
		// Newest first: the earliest change is on the last page, after the
		// later ones, and entering is the oldest of all.
		if i, j := strings.Index(second.Body, "group.create"), strings.Index(second.Body, "tenant.enter"); i < 0 || j < i {
			t.Errorf("the last page is not newest first")
		}
		if strings.Contains(first.Body+second.Body, a.Admin.Email+"</td>") {
			t.Error("the admin's own change is in the audit log")
		}

		e.SignIn(a.Member.Email).Get("/admin/audit").Want(t, http.StatusForbidden)
		e.SignIn(b.Admin.Email).Get("/admin/audit").Want(t, http.StatusOK).
			Lacks(t, "root@ops.test", "group.create").Contains(t, "Nothing has been recorded yet.")
	})
}
