package graph_test

import (
	"context"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent/user"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/viewer"
)

// TestUpdateUserEmailChecked: a tenant admin cannot give a user an address
// on another tenant's domain (which would let them sign in there), cannot
// tell whether an address exists in another tenant, and cannot store
// something that is not an address. updateUser answers as createUser does.
func TestUpdateUserEmailChecked(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		e := newEnv(t, url)
		a, _ := e.newTenant("alpha"), e.newTenant("beta")
		const (
			update = `mutation($id: ID!, $in: UpdateUserInput!) { updateUser(id: $id, input: $in) { id email } }`
			create = `mutation($in: CreateUserInput!) { createUser(input: $in) { id } }`
		)
		sys := viewer.SystemContext(context.Background())
		stored := func() string { return e.db.Ent.User.GetX(sys, a.member.ID).Email }

		refused := func(email string) string {
			t.Helper()
			r := e.gql(a.adminToken, update, vars{"id": a.member.ID, "in": vars{"email": email}})
			if r.code() != "BAD_USER_INPUT" || r.Errors[0].Extensions["field"] != "email" {
				t.Fatalf("updateUser email %q: %+v, want BAD_USER_INPUT on email", email, r.Errors)
			}
			if got := stored(); got != "member@alpha.test" {
				t.Fatalf("updateUser email %q stored %q", email, got)
			}
			return r.Errors[0].Message
		}
		for _, bad := range []string{"not an email <script>", "", "a@b@alpha.test", "member2@beta.test", "admin@beta.test"} {
			refused(bad)
		}
		// Another tenant's addresses: existing or not, the same answer, which
		// names only the domain rule.
		taken, free := refused("admin@beta.test"), refused("nobody@beta.test")
		if strings.ReplaceAll(taken, "admin@", "") != strings.ReplaceAll(free, "nobody@", "") || strings.Contains(taken, "exists") {
			t.Fatalf("another tenant's existing address answers %q, a free one %q", taken, free)
		}
		// An address of this tenant that is taken: the same answer as createUser.
		own := refused("ADMIN@alpha.test")
		r := e.gql(a.adminToken, create, vars{"in": vars{"email": "admin@alpha.test", "password": testPassword}})
		if r.code() != "BAD_USER_INPUT" || r.Errors[0].Message != own {
			t.Fatalf("createUser with a taken address: %+v; updateUser said %q", r.Errors, own)
		}

		// Members change nobody, not even themselves.
		if r := e.gql(a.memberToken, update, vars{"id": a.member.ID, "in": vars{"email": "me@alpha.test"}}); r.code() != "FORBIDDEN" {
			t.Fatalf("member updating an email: %+v", r.Errors)
		}
		// A good address is stored normalized; keeping one's own is fine.
		for _, good := range []string{" Ada@Alpha.TEST ", "ada@alpha.test"} {
			r := e.gql(a.adminToken, update, vars{"id": a.member.ID, "in": vars{"email": good, "name": "Ada"}})
			r.ok(t)
		}
		if n := e.db.Ent.User.Query().Where(user.Email("ada@alpha.test"), user.Name("Ada")).CountX(sys); n != 1 || stored() != "ada@alpha.test" {
			t.Fatalf("after a good update: %d users ada@alpha.test, member's email %q", n, stored())
		}
	})
}
