package graph_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/apitoken"
	"github.com/levers9/levers9/graph"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/viewer"
)

const signIn = `mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { token expiresAt user { email } } }`

type signInOut struct {
	SignIn struct {
		Token     string
		ExpiresAt time.Time
		User      struct{ Email string }
	}
}

// gqlFrom sends a request from the loopback address ip, so that limits per
// client address can be told apart from limits per email.
func (e *env) gqlFrom(t testing.TB, ip, query string, v vars) response {
	t.Helper()
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}).DialContext}
	defer tr.CloseIdleConnections()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": v})
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return do(t, &http.Client{Transport: tr}, req)
}

// email returns the email of the viewer of token, or fails.
func (e *env) email(t testing.TB, token string) string {
	t.Helper()
	r := e.gql(token, `{ viewer { user { email } } }`, nil)
	r.ok(t)
	var out struct {
		Viewer struct{ User struct{ Email string } }
	}
	r.decode(t, &out)
	return out.Viewer.User.Email
}

// freezeLimiter stops the sign-in limiter's clock, so no attempt is
// refilled while a slow test runs.
func (e *env) freezeLimiter() {
	now := time.Now()
	e.auth.Limiter = auth.NewLimiter(func() time.Time { return now })
}

func TestSignIn(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		e := newEnv(t, url)
		e.freezeLimiter()
		a := e.newTenant("acme")

		start := time.Now()
		r := e.gql("", signIn, vars{"e": " Admin@ACME.test ", "p": testPassword})
		r.ok(t)
		var out signInOut
		r.decode(t, &out)
		s := out.SignIn
		if !strings.HasPrefix(s.Token, "lv9_") || s.User.Email != "admin@acme.test" {
			t.Fatalf("signIn = %s", r.Data)
		}
		if exp := start.Add(auth.SessionTTL); s.ExpiresAt.Before(exp.Add(-time.Minute)) || s.ExpiresAt.After(exp.Add(time.Minute)) {
			t.Errorf("session expires at %v, want about %v", s.ExpiresAt, exp)
		}
		if got := e.email(t, s.Token); got != "admin@acme.test" {
			t.Fatalf("viewer of the session token = %q", got)
		}
		tok, err := e.db.Ent.APIToken.Query().
			Where(apitoken.TokenHash(auth.HashSecret(s.Token))).Only(viewer.SystemContext(context.Background()))
		if err != nil {
			t.Fatalf("session token not stored by its hash: %v", err)
		}
		if tok.Kind != apitoken.KindSession || tok.UserID != a.admin.ID || tok.TenantID != a.ent.ID || tok.EnvironmentID != a.mainEnv {
			t.Fatalf("stored session = %+v", tok)
		}

		wrong := e.gql("", signIn, vars{"e": "admin@acme.test", "p": "wrong password!"})
		unknown := e.gql("", signIn, vars{"e": "nobody@acme.test", "p": testPassword})
		for _, r := range []response{wrong, unknown} {
			if r.code() != "UNAUTHENTICATED" || len(r.Errors) != 1 {
				t.Fatalf("bad credentials: %+v", r.Errors)
			}
			if d := strings.TrimSpace(string(r.Data)); d != "null" {
				t.Fatalf("bad credentials gave data %s", d)
			}
		}
		if wrong.Errors[0].Message != unknown.Errors[0].Message ||
			fmt.Sprint(wrong.Errors[0].Extensions) != fmt.Sprint(unknown.Errors[0].Extensions) {
			t.Fatalf("a wrong password (%+v) and an unknown email (%+v) are told apart", wrong.Errors[0], unknown.Errors[0])
		}
	})
}

// Sign-in is throttled per account and address, per address and per
// account, with growing waits: a guesser at one address is held back while
// the real user at another signs in (ten wrong passwords used to lock the
// account for everyone), and every attempt is logged.
func TestSignInRateLimit(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		e := newEnv(t, url)
		e.freezeLimiter()
		var logs syncBuffer
		e.auth.Log = slog.New(slog.NewTextHandler(&logs, nil))
		e.newTenant("acme")
		ip := func(n int) string { return fmt.Sprintf("127.0.0.%d", n) }
		wrong := vars{"e": "admin@acme.test", "p": "wrong password!"}

		// One address: a few free guesses, then a wait, which hammering
		// does not end or lengthen.
		for i := range int(auth.DefaultPolicy.Pair.Free) + 1 {
			if r := e.gqlFrom(t, ip(30), signIn, wrong); r.code() != "UNAUTHENTICATED" {
				t.Fatalf("wrong attempt %d: %+v", i+1, r.Errors)
			}
		}
		for i := range 20 {
			r := e.gqlFrom(t, ip(30), signIn, wrong)
			if r.code() != "RATE_LIMITED" || !strings.Contains(r.Errors[0].Message, "too many sign-in attempts") ||
				r.Errors[0].Extensions["retryAfter"] != float64(1) {
				t.Fatalf("guess %d while held: %+v", i+1, r.Errors)
			}
		}
		if r := e.gqlFrom(t, ip(30), signIn, vars{"e": "admin@acme.test", "p": testPassword}); r.code() != "RATE_LIMITED" {
			t.Fatalf("right password at the held address: %+v", r.Errors)
		}
		// The real user at another address is not held up.
		r := e.gqlFrom(t, ip(31), signIn, vars{"e": "ADMIN@acme.test", "p": testPassword})
		r.ok(t)
		var out signInOut
		r.decode(t, &out)
		if got := e.email(t, out.SignIn.Token); got != "admin@acme.test" {
			t.Fatalf("admin signed in as %q", got)
		}

		// One address spraying many accounts.
		for i := range int(auth.DefaultPolicy.Addr.Free) + 1 {
			if r := e.gqlFrom(t, ip(40), signIn, vars{"e": fmt.Sprintf("guess%d@acme.test", i), "p": testPassword}); r.code() != "UNAUTHENTICATED" {
				t.Fatalf("guess %d: %+v", i+1, r.Errors)
			}
		}
		if r := e.gqlFrom(t, ip(40), signIn, vars{"e": "member@acme.test", "p": testPassword}); r.code() != "RATE_LIMITED" {
			t.Fatalf("one more account from the spraying address: %+v", r.Errors)
		}

		for _, want := range []string{
			"outcome=bad_credentials email=admin@acme.test addr=127.0.0.30",
			"outcome=rate_limited email=admin@acme.test addr=127.0.0.30",
			"outcome=ok email=admin@acme.test addr=127.0.0.31",
			"outcome=bad_credentials email=guess0@acme.test addr=127.0.0.40",
		} {
			if !logs.contains(want) {
				t.Errorf("no %q in the log:\n%s", want, logs.String())
			}
		}
	})
}

// syncBuffer is a log sink the server writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// contains reports whether one log line has all the key=value pairs of want.
func (s *syncBuffer) contains(want string) bool {
	for _, line := range strings.Split(s.String(), "\n") {
		all := true
		for _, kv := range strings.Fields(want) {
			all = all && strings.Contains(line, " "+kv)
		}
		if all {
			return true
		}
	}
	return false
}

func TestAPITokens(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		e := newEnv(t, url)
		a := e.newTenant("acme")
		sys := viewer.SystemContext(context.Background())
		adminTok, err := e.db.Ent.APIToken.Query().Where(apitoken.UserID(a.admin.ID)).Only(sys)
		if err != nil {
			t.Fatal(err)
		}

		t.Run("members see only their own", func(t *testing.T) {
			r := e.gql(a.memberToken, `{ apiTokens { totalCount edges { node { id userID name } } } }`, nil)
			r.ok(t)
			var out struct {
				APITokens struct {
					TotalCount int
					Edges      []struct {
						Node struct{ ID, UserID, Name string }
					}
				}
			}
			r.decode(t, &out)
			if out.APITokens.TotalCount != 1 || len(out.APITokens.Edges) != 1 || out.APITokens.Edges[0].Node.UserID != a.member.ID {
				t.Fatalf("member's apiTokens = %s", r.Data)
			}
			filtered := e.gql(a.memberToken, `query($u: ID!) { apiTokens(where: {userID: $u}) { totalCount } }`, vars{"u": a.admin.ID})
			filtered.ok(t)
			if !strings.Contains(string(filtered.Data), `"totalCount":0`) {
				t.Fatalf("member's apiTokens of the admin = %s", filtered.Data)
			}
			byID := e.gql(a.memberToken, `query($id: ID!) { node(id: $id) { id ... on APIToken { hint } } }`, vars{"id": adminTok.ID})
			if strings.Contains(string(byID.Data), adminTok.ID) || strings.Contains(string(byID.Data), adminTok.Hint) {
				t.Fatalf("member read the admin's token: %s", byID.Data)
			}
			revoke := e.gql(a.memberToken, `mutation($id: ID!) { revokeAPIToken(id: $id) { id } }`, vars{"id": adminTok.ID})
			if revoke.code() != "NOT_FOUND" {
				t.Fatalf("member revoking the admin's token: %+v", revoke.Errors)
			}
			if e.email(t, a.adminToken) != "admin@acme.test" {
				t.Fatal("admin token no longer works")
			}
		})

		t.Run("secret shown once, stored hashed", func(t *testing.T) {
			r := e.gql(a.memberToken, `mutation { createAPIToken(name: "ci") { token apiToken { id name kind hint userID revokedAt } } }`, nil)
			r.ok(t)
			var out struct {
				CreateAPIToken struct {
					Token    string
					APIToken struct {
						ID, Name, Kind, Hint, UserID string
						RevokedAt                    *time.Time
					}
				}
			}
			r.decode(t, &out)
			c := out.CreateAPIToken
			if !strings.HasPrefix(c.Token, "lv9_") || len(c.Token) != 56 || c.APIToken.Hint != c.Token[:10] ||
				c.APIToken.Kind != "API" || c.APIToken.UserID != a.member.ID || c.APIToken.RevokedAt != nil {
				t.Fatalf("createAPIToken = %s", r.Data)
			}
			stored, err := e.db.Ent.APIToken.Get(sys, c.APIToken.ID)
			if err != nil {
				t.Fatal(err)
			}
			if stored.TokenHash != auth.HashSecret(c.Token) || strings.Contains(stored.TokenHash, c.Token[4:]) {
				t.Fatalf("stored token_hash %q is not the hash of the secret", stored.TokenHash)
			}
			if e.email(t, c.Token) != "member@acme.test" {
				t.Fatal("new token does not act as the member")
			}
			// Listing it again shows no secret.
			list := e.gql(a.memberToken, `{ apiTokens { edges { node { id name hint } } } }`, nil)
			list.ok(t)
			if strings.Contains(string(list.Data), c.Token) {
				t.Fatalf("apiTokens shows the secret: %s", list.Data)
			}

			past := e.gql(a.memberToken, `mutation($x: Time!) { createAPIToken(name: "late", expiresAt: $x) { token } }`,
				vars{"x": time.Now().Add(-time.Hour).Format(time.RFC3339)})
			if past.code() != "BAD_USER_INPUT" || past.Errors[0].Extensions["field"] != "expiresAt" {
				t.Fatalf("token expiring in the past: %+v", past.Errors)
			}

			// Revoked, it stops working at once.
			rv := e.gql(a.memberToken, `mutation($id: ID!) { revokeAPIToken(id: $id) { id revokedAt } }`, vars{"id": c.APIToken.ID})
			rv.ok(t)
			if strings.Contains(string(rv.Data), `"revokedAt":null`) {
				t.Fatalf("revokeAPIToken = %s", rv.Data)
			}
			used := e.gql(c.Token, `{ viewer { user { email } } }`, nil)
			if used.Status != http.StatusUnauthorized || used.code() != "UNAUTHENTICATED" {
				t.Fatalf("revoked token: status %d, %+v", used.Status, used.Errors)
			}
			if e.email(t, a.memberToken) != "member@acme.test" {
				t.Fatal("revoking one token broke another")
			}
		})

		t.Run("no hash in the schema", func(t *testing.T) {
			r := e.gql(a.memberToken, `{ __schema { types { name fields { name } inputFields { name } } } }`, nil)
			r.ok(t)
			var out struct {
				Schema struct {
					Types []struct {
						Name        string
						Fields      []struct{ Name string }
						InputFields []struct{ Name string }
					}
				} `json:"__schema"`
			}
			r.decode(t, &out)
			var apiToken []string
			for _, ty := range out.Schema.Types {
				for _, f := range append(ty.Fields, ty.InputFields...) {
					if strings.Contains(strings.ToLower(f.Name), "hash") {
						t.Errorf("%s.%s exposes a hash", ty.Name, f.Name)
					}
					if ty.Name == "APIToken" {
						apiToken = append(apiToken, f.Name)
					}
				}
			}
			if len(apiToken) == 0 {
				t.Fatal("no type APIToken in the schema")
			}
			for _, f := range apiToken {
				if l := strings.ToLower(f); l == "token" || strings.Contains(l, "secret") {
					t.Errorf("APIToken.%s exposes the secret", f)
				}
			}
			ty := e.gql(a.memberToken, `{ __type(name: "APIToken") { fields { name } } }`, nil)
			ty.ok(t)
			if strings.Contains(strings.ToLower(string(ty.Data)), "hash") || !strings.Contains(string(ty.Data), `"hint"`) {
				t.Fatalf("APIToken fields = %s", ty.Data)
			}
		})
	})
}

// The token is checked before the body is read, and a request without one
// may send 16 KiB at most: nobody unauthenticated can make the server wait
// for (or hold) a large body. Each request sends its header and no body;
// the answer must come without it.
func TestBodyReadAfterAuthentication(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		e := newEnv(t, url)
		cases := []struct {
			name, header string
			length       int
			status       int
			msg          string
		}{
			{"anonymous 100000 bytes", "", 100000, http.StatusRequestEntityTooLarge, "larger than 16 KiB without a token"},
			{"anonymous just over 16 KiB", "", graph.MaxAnonymousBodyBytes + 1, http.StatusRequestEntityTooLarge, "larger than 16 KiB"},
			{"bad token, 500000 bytes", "Authorization: Bearer lv9_not-a-token\r\n", 500000, http.StatusUnauthorized, "invalid, expired or revoked token"},
			{"unknown token, 500000 bytes", "Authorization: Bearer " + unknownToken + "\r\n", 500000, http.StatusUnauthorized, "invalid, expired or revoked token"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: levers9.test\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n", tc.header, tc.length)
				// Not a timing: a server waiting for the body never answers.
				_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
				res, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					t.Fatalf("no answer before the body was sent: %v", err)
				}
				defer res.Body.Close()
				body, _ := io.ReadAll(res.Body)
				if res.StatusCode != tc.status || !strings.Contains(string(body), tc.msg) {
					t.Fatalf("%d %s; want %d %q", res.StatusCode, body, tc.status, tc.msg)
				}
			})
		}
		// A chunked body says no length: it is cut at the limit.
		body := `{"query":"{ __typename }","pad":"` + strings.Repeat("x", graph.MaxAnonymousBodyBytes) + `"}`
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL, io.MultiReader(strings.NewReader(body)))
		req.ContentLength = -1
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("anonymous chunked body of %d bytes: %d", len(body), res.StatusCode)
		}
		// A signIn is far below the limit.
		e.newTenant("acme")
		e.gql("", signIn, vars{"e": "admin@acme.test", "p": testPassword}).ok(t)
	})
}

// unknownToken is well formed but was never issued.
var unknownToken = "lv9_" + strings.Repeat("a", 52)
