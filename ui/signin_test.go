package ui_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
)

// After sign-in the dashboard returns to next only when it is a page of
// this site: /%09/evil.example used to answer Location: /\t/evil.example,
// which browsers follow to evil.example.
func TestSignInNextStaysOnSite(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		cases := []struct{ next, want string }{
			{"/jobs?service=main", "/jobs?service=main"},
			{"/\t/evil.example", "/"},
			{"/\n/evil.example", "/"},
			{"//evil.example", "/"},
			{"/\\evil.example", "/"},
			{"/%2F/evil.example", "/"},
			{"https://evil.example/", "/"},
		}
		for _, tc := range cases {
			// The form posts next back after a sign-in.
			b := e.browser()
			res, body := b.post("/signin", url.Values{"email": {memberEmail}, "password": {testPassword}, "next": {tc.next}})
			if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != tc.want {
				t.Errorf("sign-in with next=%q: %d Location %q, want 303 %q (%s)", tc.next, res.StatusCode, res.Header.Get("Location"), tc.want, body)
			}
			// A signed-in browser sent to /signin?next=… goes straight on.
			res, _ = b.do(http.MethodGet, "/signin?next="+url.QueryEscape(tc.next), nil)
			if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != tc.want {
				t.Errorf("GET /signin?next=%q signed in: %d Location %q, want 303 %q", tc.next, res.StatusCode, res.Header.Get("Location"), tc.want)
			}
		}
		// The reported request, byte for byte.
		b := e.browser()
		b.signIn(memberEmail)
		res, _ := b.do(http.MethodGet, "/signin?next=/%09/evil.example", nil)
		if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || loc != "/" {
			t.Errorf("GET /signin?next=/%%09/evil.example: %d Location %q, want 303 /", res.StatusCode, loc)
		}
		// A page that needs a session sends the browser to sign in and back.
		res, _ = e.browser().do(http.MethodGet, "/jobs?service=main", nil)
		if loc := res.Header.Get("Location"); loc != "/signin?next="+url.QueryEscape("/jobs?service=main") {
			t.Errorf("GET /jobs signed out: Location %q", loc)
		}
	})
}

// A guesser is held back with 429 and Retry-After, by the same throttle as
// GraphQL signIn; the waits grow, so some guess soon lands inside one
// whatever the machine's speed.
func TestSignInThrottled(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		b := e.browser()
		for i := range 20 {
			res, body := b.post("/signin", url.Values{"email": {memberEmail}, "password": {"wrong password!"}})
			if res.StatusCode == http.StatusUnauthorized {
				if i > 12 {
					t.Fatalf("wrong password %d still answered 401", i+1)
				}
				continue
			}
			secs, err := strconv.Atoi(res.Header.Get("Retry-After"))
			if res.StatusCode != http.StatusTooManyRequests || err != nil || secs < 1 || !strings.Contains(body, "too many sign-in attempts") {
				t.Fatalf("wrong password %d: %d Retry-After %q", i+1, res.StatusCode, res.Header.Get("Retry-After"))
			}
			if i < 6 {
				t.Fatalf("held back after only %d wrong passwords", i)
			}
			return
		}
	})
}
