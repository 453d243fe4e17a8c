package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/levers9/levers9/internal/dbtest"
)

// An admin creates a secret on the Secrets page: its keys are listed, its
// value appears in no page afterwards (nor in a refused form, which
// writes nothing and says what is wrong next to the field). A member
// sees it by name but may not delete it; the member deletes a secret of
// their own after confirming, and the admin deletes the admin's.
func TestBrowserSecrets(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		s := startServer(t, t.TempDir(), url)
		c := s.credentials()
		const memberEmail, memberPassword = "ada@levers9.local", "member password 1"
		gql(t, s.URL, c.Token, `mutation($p: String!) { createUser(input: {email: "ada@levers9.local", password: $p, role: MEMBER}) { id } }`,
			map[string]any{"p": memberPassword}, new(map[string]any))
		value := "tok-" + randomHex(t) // what must never come back
		badValue := "bad-" + randomHex(t)

		tb := newTab(t, s.URL)
		tb.signIn(c.AdminEmail, c.AdminPassword)
		tb.open("/secrets")
		tb.waitText("main", "No secrets yet")
		tb.waitText("nav", "Secrets")

		// A refused form: errors at the field, nothing written, the typed
		// values not sent back.
		tb.setValue("#secret-name", "broken")
		tb.setValue("#secret-values", "lower="+badValue+"\nnot a line\nOK="+badValue)
		tb.do("posting a bad secret", chromedp.Click(chromedp.ID("secret-submit")), chromedp.WaitVisible(chromedp.ID("secret-values-errors")))
		tb.waitText("#secret-values-errors", "line 1")
		tb.waitText("#secret-values-errors", "line 2 is not KEY=VALUE")
		if html := tb.html(); strings.Contains(html, badValue) {
			t.Error("a refused form shows the values typed")
		}
		if names := secretNames(t, s.URL, c.Token); len(names) != 0 {
			t.Fatalf("a refused form wrote secrets %v", names)
		}

		tb.setValue("#secret-name", "hf")
		tb.setValue("#secret-values", "HF_TOKEN="+value+"\nOTHER=a=b")
		tb.do("creating a secret", chromedp.Click(chromedp.ID("secret-submit")), chromedp.WaitVisible(chromedp.ID("secret-hf")))
		tb.waitText("main", "Secret hf saved")
		tb.waitText("#secret-hf .keys", "HF_TOKEN, OTHER")
		tb.waitText("#secret-hf", c.AdminEmail)
		id := firstID(t, s.URL, c.Token, `{ secrets { edges { node { id name } } } }`, "secrets")

		for _, path := range []string{"/secrets", "/secrets/" + id + "/delete", "/apps", "/admin/audit"} {
			tb.open(path)
			if html := tb.html(); strings.Contains(html, value) {
				t.Errorf("%s shows the secret's value", path)
			}
		}

		// The member: sees it, may not delete it.
		mb := newTab(t, s.URL)
		mb.signIn(memberEmail, memberPassword)
		mb.open("/secrets")
		mb.waitText("#secret-hf .keys", "HF_TOKEN")
		if mb.present("#delete-hf") {
			t.Error("a member is offered to delete the admin's secret")
		}
		if code := mb.open("/secrets/" + id + "/delete"); code != http.StatusForbidden {
			t.Errorf("a member's GET of the admin's secret's delete page: %d; want 403", code)
		}
		if html := mb.html(); strings.Contains(html, value) {
			t.Error("the member's pages show the secret's value")
		}
		// Their own secret they delete, after confirming.
		mb.open("/secrets")
		mb.setValue("#secret-name", "mine")
		mb.setValue("#secret-values", "MINE=1")
		mb.do("creating the member's secret", chromedp.Click(chromedp.ID("secret-submit")), chromedp.WaitVisible(chromedp.ID("secret-mine")))
		mb.do("opening the confirmation", chromedp.Click(chromedp.ID("delete-mine")), chromedp.WaitVisible(chromedp.ID("confirm-delete")))
		mb.waitText("#confirm-delete", "MINE")
		mb.do("confirming", chromedp.Click(chromedp.ID("confirm-delete-submit")), chromedp.WaitVisible(chromedp.ID("secret-hf")))
		mb.waitText("main", "Secret mine deleted")
		if mb.present("#secret-mine") {
			t.Error("the member's deleted secret is still listed")
		}
		if names := secretNames(t, s.URL, c.Token); strings.Join(names, ",") != "hf" {
			t.Errorf("secrets after the member's delete: %v; want [hf]", names)
		}

		// The admin deletes the admin's.
		tb.open("/secrets")
		tb.do("opening the confirmation", chromedp.Click(chromedp.ID("delete-hf")), chromedp.WaitVisible(chromedp.ID("confirm-delete")))
		tb.do("confirming", chromedp.Click(chromedp.ID("confirm-delete-submit")), chromedp.WaitVisible(chromedp.ID("secret-form")))
		tb.waitText("main", "Secret hf deleted")
		tb.waitText("main", "No secrets yet")
	})
}

// html is the whole page's markup.
func (tb *tab) html() string {
	tb.t.Helper()
	return run(tb, "reading the page", chromedp.Evaluate[string](`document.documentElement.outerHTML`))
}

// secretNames are the names of the secrets token's environment holds.
func secretNames(t *testing.T, base, token string) []string {
	t.Helper()
	var out struct {
		Secrets struct {
			Edges []struct{ Node struct{ Name string } }
		}
	}
	gql(t, base, token, `{ secrets { edges { node { name } } } }`, nil, &out)
	var names []string
	for _, e := range out.Secrets.Edges {
		names = append(names, e.Node.Name)
	}
	return names
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
