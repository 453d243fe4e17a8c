package ui_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/ent/user"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/buckets"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui"
	"github.com/levers9/levers9/ui/session"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

const (
	adminEmail      = "admin@levers9.local"
	superEmail      = "superadmin@levers9.local"
	memberEmail     = "member@levers9.local"
	testPassword    = "correct horse battery"
	otherAdminEmail = "boss@other.test"
)

// env is the dashboard on a fresh database, served in-process, with a
// seeded tenant (admin, member, superadmin) and a second tenant.
type env struct {
	t       testing.TB
	db      *database.DB
	jobs    *jobs.Service
	tenancy *tenancy.Service
	srv     *httptest.Server
	tenant  *ent.Tenant
	admin   *viewer.Viewer // the seeded tenant's admin, for setting up
	other   *viewer.Viewer // the admin of the second tenant
}

type envOptions struct {
	tls            bool
	publicURL      string
	idle, lifetime time.Duration
	queries        *atomic.Int64 // when set, counts the ent client's statements
}

func newEnv(t testing.TB, url string, opts ...envOptions) *env {
	t.Helper()
	var o envOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("LEVERS9_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	db, err := database.Open(ctx, url, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if o.queries != nil {
		db.Ent = countingClient(db, o.queries)
	}
	if err := db.Exclusive(ctx, func() error { return db.Migrate(ctx) }); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, db: db}
	bus := notify.New(db.Pool, log)
	t.Cleanup(bus.Close)
	e.tenancy = &tenancy.Service{DB: db, Log: log, LocalStorageRoot: t.TempDir()}
	seeded, err := e.tenancy.Bootstrap(ctx, tenancy.Seed{AdminPassword: testPassword, SuperadminPassword: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	e.tenant = seeded.Tenant
	e.jobs = &jobs.Service{DB: db, Log: log, Now: time.Now, Bus: bus}
	authn := auth.NewService(db.Ent, log, nil)
	mux := http.NewServeMux()
	if o.tls {
		e.srv = httptest.NewUnstartedServer(mux)
		e.srv.StartTLS()
	} else {
		e.srv = httptest.NewServer(mux)
	}
	t.Cleanup(e.srv.Close)
	public := o.publicURL
	if public == "" {
		public = e.srv.URL
	}
	_, err = ui.Routes(ctx, mux, ui.Config{DB: db, Auth: authn, Tenancy: e.tenancy, Jobs: e.jobs,
		Files: &buckets.Files{Ent: db.Ent}, Nodes: &nodes.Service{Ent: db.Ent, Now: time.Now, PublicURL: public}, Bus: bus, Log: log, PublicURL: public, MaxUpload: 1 << 20, Version: "test",
		IdleTimeout: o.idle, Lifetime: o.lifetime})
	if err != nil {
		t.Fatal(err)
	}

	sys := viewer.SystemContext(ctx)
	admin, err := db.Ent.User.Query().Where(user.Email(adminEmail)).Only(sys)
	if err != nil {
		t.Fatal(err)
	}
	env, err := tenancy.MainEnvironmentID(sys, db.Ent, e.tenant.ID)
	if err != nil {
		t.Fatal(err)
	}
	e.admin = &viewer.Viewer{UserID: admin.ID, TenantID: e.tenant.ID, EnvironmentID: env, Admin: true}
	if _, err := e.tenancy.CreateUser(viewer.NewContext(ctx, e.admin), tenancy.NewUser{Email: memberEmail, Password: testPassword}); err != nil {
		t.Fatal(err)
	}
	ot, oadmin, err := e.tenancy.CreateTenant(sys, tenancy.NewTenant{Name: "Other", Slug: "other", EmailDomains: []string{"other.test"},
		AdminEmail: otherAdminEmail, AdminPassword: testPassword, BudgetPolicy: tenant.BudgetPolicyStop})
	if err != nil {
		t.Fatal(err)
	}
	oenv, err := tenancy.MainEnvironmentID(sys, db.Ent, ot.ID)
	if err != nil {
		t.Fatal(err)
	}
	e.other = &viewer.Viewer{UserID: oadmin.ID, TenantID: ot.ID, EnvironmentID: oenv, Admin: true}
	return e
}

// submit stores a job as v, running sh -c command.
func (e *env) submit(v *viewer.Viewer, name, command string) *ent.Job {
	e.t.Helper()
	j, err := e.jobs.Submit(viewer.NewContext(context.Background(), v), jobspec.Job{Name: name, Queue: "default",
		Services: []jobspec.Service{{Name: "main", Command: []string{"sh", "-c", command}, CPU: 0.1, MemoryMiB: 64}}})
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

// browser is an HTTP client with its own cookies, like one browser.
type browser struct {
	t    testing.TB
	e    *env
	c    *http.Client
	base *url.URL
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	c := new(http.Client)
	*c = *e.srv.Client() // a copy: the server's client is shared
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	u, _ := url.Parse(e.srv.URL)
	return &browser{t: e.t, e: e, c: c, base: u}
}

// do sends a request as a same-origin browser would and returns the status
// and body.
func (b *browser) do(method, path string, form url.Values, header ...string) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.e.srv.URL+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return res, string(out)
}

func (b *browser) get(path string) (int, string) {
	b.t.Helper()
	res, body := b.do(http.MethodGet, path, nil)
	return res.StatusCode, body
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the session's CSRF token, read from the first page that shows
// a form: sign-in before, the jobs or tenants page after signing in.
func (b *browser) csrf() string {
	b.t.Helper()
	for _, path := range []string{"/signin", "/jobs", "/superadmin"} {
		_, body := b.get(path)
		if m := csrfRe.FindStringSubmatch(body); m != nil {
			return m[1]
		}
	}
	b.t.Fatal("no page shows a CSRF token")
	return ""
}

// post posts form to path with the page's CSRF token, from this origin.
func (b *browser) post(path string, form url.Values) (*http.Response, string) {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if form.Get("csrf") == "" {
		form.Set("csrf", b.csrf())
	}
	return b.do(http.MethodPost, path, form, "Origin", b.e.srv.URL, "Sec-Fetch-Site", "same-origin")
}

// signIn signs in and fails the test unless it worked.
func (b *browser) signIn(email string) {
	b.t.Helper()
	res, body := b.post("/signin", url.Values{"email": {email}, "password": {testPassword}})
	if res.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("sign-in as %s: %d %s", email, res.StatusCode, body)
	}
}

// cookie is the session cookie the jar holds.
func (b *browser) cookie() string {
	for _, c := range b.c.Jar.Cookies(b.base) {
		if c.Name == session.CookieName {
			return c.Value
		}
	}
	return ""
}

// viewerOf is the viewer a user of the seeded tenant acts as.
func (e *env) viewerOf(email string) *viewer.Viewer {
	e.t.Helper()
	u, err := e.db.Ent.User.Query().Where(user.Email(email)).Only(viewer.SystemContext(context.Background()))
	if err != nil {
		e.t.Fatal(err)
	}
	return &viewer.Viewer{UserID: u.ID, TenantID: e.tenant.ID, EnvironmentID: e.admin.EnvironmentID, Admin: u.Role == user.RoleAdmin}
}
