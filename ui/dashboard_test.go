package ui_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/apitoken"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
	"github.com/levers9/levers9/ui/session"
)

// The session cookie is HttpOnly and SameSite=Lax always, and Secure when
// the dashboard is served over TLS or its public URL is https.
func TestDashboardCookieFlags(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		opts       envOptions
		wantSecure bool
	}{
		{"plain http", envOptions{}, false},
		{"tls", envOptions{tls: true}, true},
		{"https public url behind a proxy", envOptions{publicURL: "https://levers9.example"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dbtest.Each(t, func(t *testing.T, dbURL string) {
				e := newEnv(t, dbURL, tc.opts)
				b := e.browser()
				res, _ := b.do(http.MethodGet, "/signin", nil)
				var c *http.Cookie
				for _, k := range res.Cookies() {
					if k.Name == session.CookieName {
						c = k
					}
				}
				if c == nil {
					t.Fatalf("GET /signin set no session cookie; headers %v", res.Header)
				}
				if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Secure != tc.wantSecure {
					t.Errorf("cookie HttpOnly=%v SameSite=%v Secure=%v; want true, Lax, %v", c.HttpOnly, c.SameSite, c.Secure, tc.wantSecure)
				}
			})
		})
	}
}

// Signing in renews the session token (a token planted before sign-in is
// worth nothing after), and signing out ends the session and its API token.
func TestDashboardSessionRenewedOnSignInAndDestroyedOnSignOut(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url)
		b := e.browser()
		b.csrf()
		before := b.cookie()
		if before == "" {
			t.Fatal("no session before sign-in")
		}
		b.signIn(memberEmail)
		after := b.cookie()
		if after == "" || after == before {
			t.Fatalf("session token %q after sign-in; want a new one (was %q)", after, before)
		}
		if code, _ := b.get("/jobs"); code != http.StatusOK {
			t.Fatalf("GET /jobs after sign-in: %d", code)
		}
		// The pre-sign-in token is not signed in.
		planted := e.browser()
		planted.c.Jar.SetCookies(planted.base, []*http.Cookie{{Name: session.CookieName, Value: before}})
		if code, _ := planted.get("/jobs"); code != http.StatusSeeOther {
			t.Errorf("GET /jobs with the pre-sign-in session token: %d; want a redirect to sign-in", code)
		}

		res, _ := b.post("/signout", nil)
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign-out: %d", res.StatusCode)
		}
		stolen := e.browser()
		stolen.c.Jar.SetCookies(stolen.base, []*http.Cookie{{Name: session.CookieName, Value: after}})
		if code, _ := stolen.get("/jobs"); code != http.StatusSeeOther {
			t.Errorf("GET /jobs with the signed-out session token: %d; want a redirect to sign-in", code)
		}
		n, err := e.db.Ent.APIToken.Query().Where(apitoken.KindEQ(apitoken.KindSession), apitoken.RevokedAtIsNil()).
			Count(viewer.SystemContext(context.Background()))
		if err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%d sign-in tokens still valid after sign-out", n)
		}
	})
}

// Entering and leaving a tenant change the superadmin's privileges, so
// each renews the session token; the old ones stop working.
func TestDashboardSessionRenewedOnEnteringTenant(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		b := e.browser()
		b.signIn(superEmail)
		outside := b.cookie()
		res, body := b.post("/superadmin/enter", url.Values{"tenant": {e.tenant.ID}})
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("enter tenant: %d %s", res.StatusCode, body)
		}
		inside := b.cookie()
		if inside == outside {
			t.Fatal("entering a tenant kept the session token")
		}
		code, body := b.get("/jobs")
		if code != http.StatusOK || !strings.Contains(body, `id="tenant-banner"`) {
			t.Fatalf("GET /jobs inside the tenant: %d, banner shown: %v", code, strings.Contains(body, "tenant-banner"))
		}
		// The header names the viewer and the tenant, read with the
		// superadmin's own rights (their user is of no tenant).
		if _, who, _ := strings.Cut(body, `class="who"`); !strings.Contains(who, superEmail) || !strings.Contains(who, e.tenant.Name) {
			t.Errorf("the header inside the tenant does not name %s and %s", superEmail, e.tenant.Name)
		}
		old := e.browser()
		old.c.Jar.SetCookies(old.base, []*http.Cookie{{Name: session.CookieName, Value: outside}})
		if code, _ := old.get("/superadmin"); code != http.StatusSeeOther {
			t.Errorf("the session token from before entering still works: %d", code)
		}
		res, _ = b.post("/superadmin/leave", nil)
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("leave tenant: %d", res.StatusCode)
		}
		if left := b.cookie(); left == inside || left == outside {
			t.Error("leaving a tenant kept the session token")
		}
		code, body = b.get("/superadmin")
		if code != http.StatusOK || strings.Contains(body, `id="tenant-banner"`) {
			t.Errorf("GET /superadmin after leaving: %d, banner still shown: %v", code, strings.Contains(body, "tenant-banner"))
		}
		if _, who, _ := strings.Cut(body, `class="who"`); !strings.Contains(who, superEmail) {
			t.Errorf("the header outside every tenant does not name %s", superEmail)
		}
	})
}

// A state-changing request needs the session's CSRF token and must come
// from this origin; a refused one changes nothing.
func TestDashboardCSRFRejectsCrossSitePosts(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		b := e.browser()
		b.signIn(adminEmail)
		token := b.csrf()
		j := e.submit(e.admin, "keep-me", "sleep 60")
		cases := []struct {
			name   string
			form   url.Values
			header []string
		}{
			{"cross-site form without token", url.Values{}, []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}},
			{"cross-site form with a stolen token", url.Values{"csrf": {token}}, []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}},
			{"same-site other origin", url.Values{"csrf": {token}}, []string{"Origin", "http://127.0.0.1:1", "Sec-Fetch-Site", "same-site"}},
			{"old browser, no token", url.Values{}, nil},
			{"wrong token", url.Values{"csrf": {token + "x"}}, []string{"Origin", e.srv.URL}},
		}
		for _, tc := range cases {
			res, _ := b.do(http.MethodPost, "/jobs/"+j.ID+"/cancel", tc.form, tc.header...)
			if res.StatusCode != http.StatusForbidden {
				t.Errorf("%s: status %d; want 403", tc.name, res.StatusCode)
			}
		}
		got, err := e.db.Ent.Job.Get(viewer.SystemContext(context.Background()), j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != job.StatusPending {
			t.Fatalf("a refused request changed the job: %s", got.Status)
		}
		// The same form from this origin with the token works.
		res, body := b.post("/jobs/"+j.ID+"/cancel", url.Values{"csrf": {token}})
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("same-origin cancel: %d %s", res.StatusCode, body)
		}
	})
}

// Job names and log lines are user input: the pages show them as text.
func TestDashboardRendersScriptAsText(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		const evil = `<script>alert("x")</script>`
		j := e.submit(e.admin, "job "+evil, "true")
		err := (&joblog.Service{DB: e.db}).Append(viewer.SystemContext(context.Background()), j.ID, 1, []wire.LogLine{
			{Seq: 1, Service: "main", Stream: wire.Stdout, Time: time.Now(), Text: "out " + evil},
		})
		if err != nil {
			t.Fatal(err)
		}
		b := e.browser()
		b.signIn(adminEmail)
		for _, path := range []string{"/jobs", "/jobs/" + j.ID + "?service=main"} {
			code, body := b.get(path)
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d", path, code)
			}
			if strings.Contains(body, evil) {
				t.Errorf("GET %s contains the raw script tag", path)
			}
			if !strings.Contains(body, `&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;`) {
				t.Errorf("GET %s does not show the script as text", path)
			}
		}
		if _, body := b.get("/jobs/" + j.ID + "?service=main"); !strings.Contains(body, "out &lt;script&gt;") {
			t.Error("the log line is not shown as text")
		}
	})
}

// A member reaches no superadmin page and no object of another tenant,
// however the URL is guessed; an anonymous visitor is sent to sign in.
func TestDashboardAuthorization(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		theirs := e.submit(e.other, "secret", "true")
		mine := e.submit(e.admin, "admins-job", "true")
		b := e.browser()
		b.signIn(memberEmail)
		cases := []struct {
			path string
			want int
		}{
			{"/superadmin", http.StatusForbidden},
			{"/jobs/" + theirs.ID, http.StatusNotFound},
			{"/jobs/" + theirs.ID + "/logs?service=main", http.StatusNotFound},
			{"/buckets/no-such-bucket", http.StatusNotFound},
			{"/jobs/" + mine.ID, http.StatusOK}, // same tenant: privacy lets members read jobs
		}
		for _, tc := range cases {
			if code, _ := b.get(tc.path); code != tc.want {
				t.Errorf("member GET %s: %d; want %d", tc.path, code, tc.want)
			}
		}
		for _, path := range []string{"/superadmin/enter", "/jobs/" + theirs.ID + "/cancel"} {
			res, _ := b.post(path, url.Values{"tenant": {e.other.TenantID}})
			if res.StatusCode != http.StatusForbidden && res.StatusCode != http.StatusNotFound {
				t.Errorf("member POST %s: %d; want 403 or 404", path, res.StatusCode)
			}
		}
		if res, _ := b.post("/jobs/"+mine.ID+"/cancel", nil); res.StatusCode != http.StatusForbidden {
			t.Errorf("member cancelling the admin's job: %d; want 403", res.StatusCode)
		}
		anon := e.browser()
		if code, _ := anon.get("/jobs"); code != http.StatusSeeOther {
			t.Errorf("anonymous GET /jobs: %d; want a redirect to sign-in", code)
		}
	})
}

// Bad input in the submission form comes back with each error next to its
// field and the typed values kept, and nothing is stored.
func TestDashboardSubmitShowsFieldErrors(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		b := e.browser()
		b.signIn(memberEmail)
		base := url.Values{"queue": {"default"}, "services": {"1"}, "services[0].name": {"main"},
			"services[0].command": {"echo hi"}, "services[0].memoryMiB": {"64"}, "action": {"submit"}}
		cases := []struct {
			name, field, value, errorsID, want string
		}{
			{"not a number", "services[0].cpu", "lots", "svc0-cpu-errors", "must be a number of CPUs"},
			{"GPUs without a type", "services[0].gpus", "2", "svc0-gpuTypes-errors", "name the GPU type"},
			{"bad service name", "services[0].name", "Main Service", "svc0-name-errors", "not a valid service name"},
			{"unknown project", "project", "nope", "project-errors", `project "nope" not found`},
		}
		for _, tc := range cases {
			form := url.Values{}
			for k, v := range base {
				form[k] = v
			}
			form.Set(tc.field, tc.value)
			res, body := b.post("/submit", form)
			if res.StatusCode != http.StatusBadRequest {
				t.Errorf("%s: status %d; want 400", tc.name, res.StatusCode)
				continue
			}
			i := strings.Index(body, `id="`+tc.errorsID+`"`)
			if i < 0 {
				t.Errorf("%s: no errors at %s", tc.name, tc.errorsID)
				continue
			}
			if end := strings.Index(body[i:], "</ul>"); end < 0 || !strings.Contains(html.UnescapeString(body[i:i+end]), tc.want) {
				t.Errorf("%s: the errors at %s do not say %q", tc.name, tc.errorsID, tc.want)
			}
			if tc.field != "project" && !strings.Contains(body, `value="`+tc.value+`"`) { // a select offers only projects that exist
				t.Errorf("%s: the typed value %q is not kept", tc.name, tc.value)
			}
		}
		n, err := e.db.Ent.Job.Query().Count(viewer.SystemContext(context.Background()))
		if err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%d jobs stored from bad forms", n)
		}
	})
}

// A session is stored until its idle timeout from the last request, but
// never past its absolute lifetime from sign-in; an expired one is
// signed out.
func TestDashboardSessionTimeouts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name           string
		idle, lifetime time.Duration
		want           time.Duration // expiry after sign-in
	}{
		{"idle timeout first", 10 * time.Minute, 30 * time.Minute, 10 * time.Minute},
		{"absolute lifetime first", 30 * time.Minute, 10 * time.Minute, 10 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dbtest.Each(t, func(t *testing.T, dbURL string) {
				e := newEnv(t, dbURL, envOptions{idle: tc.idle, lifetime: tc.lifetime})
				b := e.browser()
				signedIn := time.Now()
				b.signIn(memberEmail)
				var unix int64
				err := e.db.SQL.QueryRowContext(context.Background(),
					"SELECT expiry FROM "+session.Table+" WHERE token = $1", b.cookie()).Scan(&unix)
				if err != nil {
					t.Fatal(err)
				}
				// Slack of a minute each way: the two bounds are 20 minutes apart.
				if got, want := time.Unix(unix, 0), signedIn.Add(tc.want); got.Before(want.Add(-time.Minute)) || got.After(want.Add(time.Minute)) {
					t.Errorf("session stored until %v; want about %v", got, want)
				}
				if _, err := e.db.SQL.ExecContext(context.Background(), "UPDATE "+session.Table+" SET expiry = $1 WHERE token = $2",
					time.Now().Add(-time.Second).Unix(), b.cookie()); err != nil {
					t.Fatal(err)
				}
				if code, _ := b.get("/jobs"); code != http.StatusSeeOther {
					t.Errorf("GET /jobs with an expired session: %d; want a redirect to sign-in", code)
				}
			})
		})
	}
}
