package tokens_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"testing"

	"github.com/levers9/levers9/ent/apitoken"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/admin/admintest"
	"github.com/levers9/levers9/ui/admin/tokens"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

var secretRe = regexp.MustCompile(`export LEVERS9_TOKEN=(lv9_[a-z2-7]+)`)

// TestTokens: an admin creates a token, sees its secret once, the secret
// authenticates, and revoking it ends it.
func TestTokens(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := admintest.New(t, dbURL, tokens.Register)
		a := e.NewTenant("acme")
		sys := viewer.SystemContext(context.Background())
		admin := e.SignIn(a.Admin.Email)
		admin.Get("/admin/tokens").Want(t, http.StatusOK).Contains(t, "No API tokens yet.")

		res := admin.Post("/admin/tokens", url.Values{"name": {"laptop"}, "expiresAt": {"2099-01-31"}}).Want(t, http.StatusOK)
		m := secretRe.FindStringSubmatch(res.Body)
		if m == nil {
			t.Fatalf("no secret shown:\n%s", res.Body)
		}
		tok := e.Ent.APIToken.Query().Where(apitoken.KindEQ(apitoken.KindAPI)).OnlyX(sys)
		if tok.UserID != a.Admin.ID || tok.Name != "laptop" || tok.ExpiresAt == nil || tok.ExpiresAt.Format("2006-01-02") != "2099-02-01" {
			t.Fatalf("stored %+v", tok)
		}
		authn := auth.NewService(e.Ent, nil, nil)
		if v, err := authn.Authenticate(context.Background(), m[1]); err != nil || v.UserID != a.Admin.ID {
			t.Fatalf("the shown secret does not authenticate: %v %v", v, err)
		}
		admin.Get("/admin/tokens").Want(t, http.StatusOK).Contains(t, "token-"+tok.ID, "laptop", "active").Lacks(t, m[1])

		admin.Post("/admin/tokens/"+tok.ID+"/revoke", nil).Want(t, http.StatusOK).Contains(t, "Token laptop revoked.", "revoked")
		if _, err := authn.Authenticate(context.Background(), m[1]); err == nil {
			t.Fatal("a revoked token still authenticates")
		}

		for _, tc := range []struct{ field, name, expires string }{
			{"name", "", ""}, {"expiresAt", "x", "tomorrow"}, {"expiresAt", "x", "2001-01-01"},
		} {
			admin.Post("/admin/tokens", url.Values{"name": {tc.name}, "expiresAt": {tc.expires}}).
				Want(t, http.StatusBadRequest).Contains(t, `id="token-`+tc.field+`-errors"`).Lacks(t, "LEVERS9_TOKEN=")
		}
		if n := e.Ent.APIToken.Query().Where(apitoken.KindEQ(apitoken.KindAPI)).CountX(sys); n != 1 {
			t.Fatalf("%d API tokens, want one", n)
		}
	})
}

// TestTokenAccess: members get 403; another user's token (admin or not,
// same tenant or not) is not found and stays valid; sessions cannot be
// revoked here.
func TestTokenAccess(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := admintest.New(t, dbURL, tokens.Register)
		a, b := e.NewTenant("acme"), e.NewTenant("other")
		sys := viewer.SystemContext(context.Background())
		if _, err := auth.IssueToken(sys, e.Ent, a.Member, "member-script", "", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := auth.IssueToken(sys, e.Ent, b.Admin, "their-script", "", ""); err != nil {
			t.Fatal(err)
		}
		memberTok := e.Ent.APIToken.Query().Where(apitoken.Name("member-script")).OnlyX(sys)
		theirTok := e.Ent.APIToken.Query().Where(apitoken.Name("their-script")).OnlyX(sys)

		member := e.SignIn(a.Member.Email)
		member.Get("/admin/tokens").Want(t, http.StatusForbidden)
		member.Post("/admin/tokens", url.Values{"name": {"x"}}).Want(t, http.StatusForbidden)
		member.Post("/admin/tokens/"+memberTok.ID+"/revoke", nil).Want(t, http.StatusForbidden)

		admin := e.SignIn(a.Admin.Email)
		admin.Get("/admin/tokens").Want(t, http.StatusOK).Lacks(t, "member-script", "their-script")
		admin.Post("/admin/tokens/"+memberTok.ID+"/revoke", nil).Want(t, http.StatusNotFound)
		admin.Post("/admin/tokens/"+theirTok.ID+"/revoke", nil).Want(t, http.StatusNotFound)
		session := e.Ent.APIToken.Query().Where(apitoken.UserID(a.Admin.ID), apitoken.KindEQ(apitoken.KindSession)).FirstX(sys)
		admin.Post("/admin/tokens/"+session.ID+"/revoke", nil).Want(t, http.StatusNotFound)

		if e.Ent.APIToken.Query().Where(apitoken.RevokedAtNotNil()).ExistX(sys) {
			t.Fatal("a token was revoked by someone who may not")
		}
	})
}
