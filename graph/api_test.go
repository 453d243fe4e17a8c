package graph_test

import (
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
)

func TestViewerAndTenant(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url)
		a := e.newTenant("acme")
		r := e.gql(a.adminToken, `{ viewer { user { email role } tenant { slug } environment { name } admin superadmin } tenant { name emailDomains } }`, nil)
		r.ok(t)
		var out struct {
			Viewer struct {
				User        struct{ Email, Role string }
				Tenant      struct{ Slug string }
				Environment struct{ Name string }
				Admin       bool
			}
			Tenant struct {
				Name         string
				EmailDomains []string
			}
		}
		r.decode(t, &out)
		if out.Viewer.User.Email != "admin@acme.test" || out.Viewer.User.Role != "ADMIN" || !out.Viewer.Admin ||
			out.Viewer.Tenant.Slug != "acme" || out.Viewer.Environment.Name != "main" ||
			out.Tenant.Name != "ACME" || len(out.Tenant.EmailDomains) != 1 || out.Tenant.EmailDomains[0] != "acme.test" {
			t.Fatalf("viewer = %+v", out)
		}
		if r := e.gql("", `{ viewer { user { email } } }`, nil); r.code() != "UNAUTHENTICATED" {
			t.Fatalf("anonymous viewer: %+v", r)
		}
	})
}
