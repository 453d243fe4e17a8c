package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/levers9/levers9/internal/dbtest"
)

// A member of one tenant gets 403 on superadmin pages and 404 on another
// tenant's job, logs and bucket, however the URLs are guessed.
func TestBrowserMemberForbidden(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		s := startServer(t, t.TempDir(), url)
		c := s.credentials()
		const password = "member password 1"
		gql(t, s.URL, c.Token, `mutation($p: String!) { createUser(input: {email: "ada@levers9.local", password: $p, role: MEMBER}) { id } }`,
			map[string]any{"p": password}, new(map[string]any))

		// Another tenant with a job and a bucket.
		var signIn struct{ SignIn struct{ Token string } }
		gql(t, s.URL, "", `mutation($p: String!) { signIn(email: "superadmin@levers9.local", password: $p) { token } }`,
			map[string]any{"p": c.SuperadminPassword}, &signIn)
		gql(t, s.URL, signIn.SignIn.Token, `mutation($p: String!) { createTenant(input: {name: "Other", slug: "other", emailDomains: ["other.test"], adminEmail: "boss@other.test", adminPassword: $p}) { tenant { id } } }`,
			map[string]any{"p": password}, new(map[string]any))
		gql(t, s.URL, "", `mutation($p: String!) { signIn(email: "boss@other.test", password: $p) { token } }`,
			map[string]any{"p": password}, &signIn)
		other := signIn.SignIn.Token
		var sub struct{ SubmitJob struct{ ID string } }
		gql(t, s.URL, other, `mutation { submitJob(spec: {name: "secret", queue: "default", services: [{name: "main", command: ["true"], cpu: 0.1}]}) { id } }`, nil, &sub)
		storage := firstID(t, s.URL, other, `{ storages(where: {name: "local"}) { edges { node { id } } } }`, "storages")
		gql(t, s.URL, other, `mutation($s: ID!) { createBucket(input: {name: "secret-data", storageID: $s}) { id } }`,
			map[string]any{"s": storage}, new(map[string]any))

		tb := newTab(t, s.URL)
		tb.signIn("ada@levers9.local", password)
		for _, tc := range []struct {
			path  string
			want  int
			title string
		}{
			{"/superadmin", http.StatusForbidden, "Forbidden"},
			{"/jobs/" + sub.SubmitJob.ID, http.StatusNotFound, "Page not found"},
			{"/jobs/" + sub.SubmitJob.ID + "?service=main", http.StatusNotFound, "Page not found"},
			{"/buckets/secret-data", http.StatusNotFound, "Page not found"},
			{"/buckets/secret-data/download?key=x", http.StatusNotFound, "Page not found"},
			{"/tokens?job=" + sub.SubmitJob.ID, http.StatusOK, "Tokens"},
		} {
			if got := tb.open(tc.path); got != tc.want {
				t.Errorf("member GET %s: %d; want %d", tc.path, got, tc.want)
			}
			if h1 := tb.text("h1"); h1 != tc.title {
				t.Errorf("member GET %s shows %q; want %q", tc.path, h1, tc.title)
			}
		}
		// The filtered Tokens page shows nothing of the other tenant's job.
		if tb.present("#charges") {
			t.Errorf("the member sees charges of another tenant's job: %q", tb.text("#charges"))
		}
		if nav := tb.text("header nav"); strings.Contains(nav, "Tenants") {
			t.Errorf("the member's navigation offers %q", nav)
		}
	})
}

// A superadmin enters a tenant from the list (audited by the domain), sees
// the banner on every page while inside, and leaves.
func TestBrowserSuperadminEntersTenant(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		s := startServer(t, t.TempDir(), url)
		c := s.credentials()
		tb := newTab(t, s.URL)
		tb.signIn("superadmin@levers9.local", c.SuperadminPassword)
		tb.waitText("#tenants", "Default")
		if tb.present("#tenant-banner") {
			t.Fatal("a banner shows before entering a tenant")
		}
		tb.do("entering the tenant",
			chromedp.Click(chromedp.CSS(`#tenants button[aria-label="Enter tenant Default"]`)),
			chromedp.WaitVisible(chromedp.ID("tenant-banner")),
		)
		tb.waitText("#tenant-banner", "Default")
		for _, path := range []string{"/jobs", "/submit", "/tokens", "/buckets", "/superadmin"} {
			tb.open(path)
			if !tb.present("#tenant-banner") {
				t.Errorf("no banner on %s inside the tenant", path)
			}
		}
		// The page before is the tenant list too: wait for the banner to go,
		// not for the list, or the next navigation cuts the post short.
		tb.do("leaving the tenant",
			chromedp.Click(chromedp.ID("leave-tenant")),
			chromedp.WaitNotPresent(chromedp.ID("tenant-banner")),
			chromedp.WaitVisible(chromedp.ID("tenants")),
		)
		if tb.present("#tenant-banner") {
			t.Error("the banner still shows after leaving")
		}
		// Outside every tenant a tenant page sends to the tenant list.
		if got := tb.open("/jobs"); got != http.StatusOK || !tb.present("#tenants") {
			t.Errorf("GET /jobs after leaving: %d; want the tenant list (outside every tenant)", got)
		}
	})
}
