package graph_test

import (
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
)

// signOut ends the session it is sent with and nothing else: the session
// token is refused afterwards, the API token made with it keeps working,
// and an API token cannot sign itself out (it is revoked by name).
func TestSignOut(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		e := newEnv(t, url)
		e.freezeLimiter()
		a := e.newTenant("acme")
		const signOut = `mutation { signOut }`
		var out signInOut
		e.gql("", signIn, vars{"e": "member@acme.test", "p": testPassword}).decode(t, &out)
		session := out.SignIn.Token
		var created struct{ CreateAPIToken struct{ Token string } }
		r := e.gql(session, `mutation { createAPIToken(name: "cli") { token } }`, nil)
		r.ok(t)
		r.decode(t, &created)
		apiToken := created.CreateAPIToken.Token

		// Another session of the same user stays open.
		var other signInOut
		e.gql("", signIn, vars{"e": "member@acme.test", "p": testPassword}).decode(t, &other)

		tests := []struct {
			name, token, want, code string
		}{
			{"anonymous", "", "", "UNAUTHENTICATED"},
			{"an API token", apiToken, `{"signOut":false}`, ""},
			{"the admin's API token", a.adminToken, `{"signOut":false}`, ""},
			{"the session", session, `{"signOut":true}`, ""},
			{"the ended session", session, "", "UNAUTHENTICATED"},
		}
		for _, tt := range tests { // in order: the session ends on the way
			r := e.gql(tt.token, signOut, nil)
			if r.code() != tt.code || (tt.code == "" && string(r.Data) != tt.want) {
				t.Fatalf("signOut with %s = %s %+v, want %s %s", tt.name, r.Data, r.Errors, tt.want, tt.code)
			}
		}
		if r := e.gql(session, `{ viewer { user { email } } }`, nil); r.code() != "UNAUTHENTICATED" {
			t.Fatalf("the ended session still answers: %s %+v", r.Data, r.Errors)
		}
		for name, tok := range map[string]string{"API token": apiToken, "other session": other.SignIn.Token, "admin": a.adminToken} {
			if got := e.email(t, tok); got == "" {
				t.Fatalf("the %s stopped working after signOut", name)
			}
		}
	})
}
