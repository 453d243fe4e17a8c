package users_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"testing"

	"github.com/levers9/levers9/ent/user"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/admin/admintest"
	"github.com/levers9/levers9/ui/admin/users"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

func TestCreateUser(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := admintest.New(t, dbURL, users.Register)
		a, b := e.NewTenant("acme"), e.NewTenant("other")
		sys := viewer.SystemContext(context.Background())
		admin := e.SignIn(a.Admin.Email)

		res := admin.Post("/admin/users", url.Values{"email": {"Ada@acme.test"}, "name": {"Ada"}, "password": {admintest.Password}, "role": {"ADMIN"}})
		res.Want(t, http.StatusOK).Contains(t, "User ada@acme.test added.", "ada@acme.test", "ADMIN", "everyone").Lacks(t, b.Member.Email)
		u := e.Ent.User.Query().Where(user.Email("ada@acme.test")).OnlyX(sys)
		if u.TenantID != a.Ent.ID || u.Role != user.RoleAdmin {
			t.Fatalf("created %+v", u)
		}
		e.SignIn("ada@acme.test") // the password works

		tests := []struct{ name, field, message string }{
			{"x@other.test", "email", "email domains (acme.test)"},
			{"not-an-email", "email", "not an email address"},
			{"ada@acme.test", "email", "already exists"},
		}
		for _, tc := range tests {
			admin.Post("/admin/users", url.Values{"email": {tc.name}, "password": {admintest.Password}, "role": {"MEMBER"}}).
				Want(t, http.StatusBadRequest).Contains(t, `id="user-`+tc.field+`-errors"`, tc.message).Lacks(t, admintest.Password)
		}
		admin.Post("/admin/users", url.Values{"email": {"bob@acme.test"}, "password": {"x"}, "role": {"MEMBER"}}).
			Want(t, http.StatusBadRequest).Contains(t, `id="user-password-errors"`)
		admin.Post("/admin/users", url.Values{"email": {"bob@acme.test"}, "password": {admintest.Password}, "role": {"ROOT"}}).
			Want(t, http.StatusBadRequest).Contains(t, `id="user-role-errors"`)
		if n := e.Ent.User.Query().Where(user.TenantID(a.Ent.ID)).CountX(sys); n != 3 {
			t.Fatalf("%d users, want admin, member and ada", n)
		}

		member := e.SignIn(a.Member.Email)
		member.Get("/admin/users").Want(t, http.StatusForbidden)
		member.Post("/admin/users", url.Values{"email": {"eve@acme.test"}, "password": {admintest.Password}}).Want(t, http.StatusForbidden)
		if e.Ent.User.Query().Where(user.Email("eve@acme.test")).ExistX(sys) {
			t.Fatal("a member created a user")
		}
	})
}

// TestGrantToUser: an admin grants tokens to a user and sees the balance;
// bad amounts, missing reasons and other tenants' users write nothing.
func TestGrantToUser(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := admintest.New(t, dbURL, users.Register)
		a, b := e.NewTenant("acme"), e.NewTenant("other")
		sys := viewer.SystemContext(context.Background())
		admin := e.SignIn(a.Admin.Email)

		admin.Post("/admin/users/grant", url.Values{"user": {a.Member.ID}, "tokens": {"42.5"}, "reason": {"welcome"}}).
			Want(t, http.StatusOK).Contains(t, "Granted 42.5 tokens to member@acme.test.", `<td class="num">42.5</td>`)
		if b, _ := (&ledger.Service{DB: e.DB}).Balance(a.AdminCtx, ledger.Payer{UserID: a.Member.ID}); b != 42*billing.Unit+billing.Unit/2 {
			t.Fatalf("balance %s", b)
		}
		for _, tc := range []struct{ user, tokens, reason, field string }{
			{a.Member.ID, "x", "r", "tokens"},
			{a.Member.ID, "0", "r", "tokens"},
			{a.Member.ID, "5", "", "reason"},
			{b.Member.ID, "5", "r", "user"},
			{"usr_nobody", "5", "r", "user"},
		} {
			admin.Post("/admin/users/grant", url.Values{"user": {tc.user}, "tokens": {tc.tokens}, "reason": {tc.reason}}).
				Want(t, http.StatusBadRequest).Contains(t, `id="grant-`+tc.field+`-errors"`)
		}
		e.SignIn(a.Member.Email).Post("/admin/users/grant", url.Values{"user": {a.Member.ID}, "tokens": {"1000"}, "reason": {"me"}}).
			Want(t, http.StatusForbidden)
		if n := e.Ent.Charge.Query().CountX(sys); n != 1 {
			t.Fatalf("%d charges, want the one grant", n)
		}
	})
}
