// Package admintest serves the dashboard in-process on a fresh database for
// the tests of the admin and nodes pages: tenants with an admin and a
// member, and browser-like clients (cookie jar, CSRF token) signed in as
// them.
package admintest

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
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/audit"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/buckets"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/queues"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/app"
	"github.com/levers9/levers9/ui/layout"
	"github.com/levers9/levers9/ui/session"
	"github.com/levers9/levers9/ui/signin"
)

// Password is every test user's password.
const Password = "correct horse battery"

// PublicURL is the server address join commands name.
const PublicURL = "http://levers9.test"

// Env is the dashboard on a fresh database.
type Env struct {
	T       testing.TB
	DB      *database.DB
	Ent     *ent.Client
	Tenancy *tenancy.Service
	Srv     *httptest.Server
}

// New serves sign-in and the pages register adds on a fresh database at
// dbURL (see dbtest).
func New(t testing.TB, dbURL string, register ...func(*app.Router)) *Env {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("LEVERS9_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	db, err := database.Open(ctx, dbURL, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Exclusive(ctx, func() error { return db.Migrate(ctx) }); err != nil {
		t.Fatal(err)
	}
	store, err := session.NewStore(ctx, db.SQL, db.Dialect)
	if err != nil {
		t.Fatal(err)
	}
	bus := notify.New(db.Pool, log)
	t.Cleanup(bus.Close)
	ten := &tenancy.Service{DB: db, Log: log, LocalStorageRoot: t.TempDir()}
	mux := http.NewServeMux()
	rt := app.NewRouter(mux, &app.Deps{
		DB: db, Auth: auth.NewService(db.Ent, log, nil), Tenancy: ten,
		Jobs:  &jobs.Service{DB: db, Log: log, Now: time.Now, Bus: bus},
		Files: &buckets.Files{Ent: db.Ent}, Nodes: &nodes.Service{Ent: db.Ent, Now: time.Now, PublicURL: PublicURL}, Bus: bus, Log: log, PublicURL: PublicURL,
		Ledger: &ledger.Service{DB: db}, Queues: &queues.Service{Ent: db.Ent}, Logs: &joblog.Service{DB: db, Bus: bus, Log: log}, Audit: &audit.Service{Ent: db.Ent},
		MaxUpload: 1 << 20, Version: "test", Sessions: session.NewManager(store, 0, 0),
	})
	signin.Register(rt)
	// The start page sends members to /jobs, which these tests do not
	// serve: a blank page stands in for it (the frame carries the CSRF
	// token).
	rt.Handle("GET /jobs", app.SignedIn, func(w http.ResponseWriter, r *http.Request) error {
		return app.Render(w, r, http.StatusOK, layout.Page(rt.Frame(r, "Jobs")))
	})
	for _, r := range register {
		r(rt)
	}
	e := &Env{T: t, DB: db, Ent: db.Ent, Tenancy: ten, Srv: httptest.NewServer(mux)}
	t.Cleanup(e.Srv.Close)
	return e
}

// Tenant is a tenant made for a test with its admin and a member.
type Tenant struct {
	Ent           *ent.Tenant
	Admin, Member *ent.User
	// AdminCtx acts as the admin, for setting up objects directly.
	AdminCtx context.Context
}

// NewTenant creates tenant slug with admin@slug.test and member@slug.test.
func (e *Env) NewTenant(slug string) *Tenant {
	e.T.Helper()
	sys := viewer.SystemContext(context.Background())
	t, admin, err := e.Tenancy.CreateTenant(sys, tenancy.NewTenant{
		Name: strings.ToUpper(slug), Slug: slug, BudgetPolicy: "STOP",
		AdminEmail: "admin@" + slug + ".test", AdminPassword: Password,
	})
	if err != nil {
		e.T.Fatal(err)
	}
	envID, err := tenancy.MainEnvironmentID(sys, e.Ent, t.ID)
	if err != nil {
		e.T.Fatal(err)
	}
	actx := viewer.NewContext(context.Background(), &viewer.Viewer{UserID: admin.ID, TenantID: t.ID, EnvironmentID: envID, Admin: true})
	member, err := e.Tenancy.CreateUser(actx, tenancy.NewUser{Email: "member@" + slug + ".test", Password: Password})
	if err != nil {
		e.T.Fatal(err)
	}
	return &Tenant{Ent: t, Admin: admin, Member: member, AdminCtx: actx}
}

// Client is a browser: it keeps cookies, follows redirects and sends the
// session's CSRF token with every form.
type Client struct {
	e    *Env
	http *http.Client
	csrf string
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// SignIn returns a client signed in as email.
func (e *Env) SignIn(email string) *Client {
	e.T.Helper()
	jar, _ := cookiejar.New(nil)
	c := &Client{e: e, http: &http.Client{Jar: jar}}
	c.csrf = c.token("/signin")
	res := c.Post("/signin", url.Values{"email": {email}, "password": {Password}, "next": {"/jobs"}})
	if res.Status != http.StatusOK || res.URL != "/jobs" {
		e.T.Fatalf("signing in as %s: status %d at %s\n%s", email, res.Status, res.URL, res.Body)
	}
	c.csrf = c.token("/jobs") // renewed at sign-in
	return c
}

// token reads the CSRF token from the form of page path.
func (c *Client) token(path string) string {
	c.e.T.Helper()
	res := c.Get(path)
	m := csrfRe.FindStringSubmatch(res.Body)
	if m == nil {
		c.e.T.Fatalf("no CSRF token on %s (status %d)", path, res.Status)
	}
	return m[1]
}

// Response is a page as the client got it, after redirects.
type Response struct {
	Status int
	Body   string
	URL    string // where redirects ended
}

// Get fetches path.
func (c *Client) Get(path string) Response {
	c.e.T.Helper()
	return c.do(http.MethodGet, path, nil)
}

// Post sends form to path with the CSRF token, as the browser would.
func (c *Client) Post(path string, form url.Values) Response {
	c.e.T.Helper()
	if form == nil {
		form = url.Values{}
	}
	if form.Get("csrf") == "" {
		form.Set("csrf", c.csrf)
	}
	return c.do(http.MethodPost, path, form)
}

func (c *Client) do(method, path string, form url.Values) Response {
	c.e.T.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.e.Srv.URL+path, body)
	if err != nil {
		c.e.T.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", c.e.Srv.URL)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.e.T.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.e.T.Fatal(err)
	}
	return Response{Status: resp.StatusCode, Body: string(b), URL: resp.Request.URL.Path}
}

// Contains fails t unless the page has every one of want.
func (r Response) Contains(t testing.TB, want ...string) Response {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(r.Body, w) {
			t.Fatalf("page %s (status %d) lacks %q:\n%s", r.URL, r.Status, w, r.Body)
		}
	}
	return r
}

// Lacks fails t if the page has any of unwanted.
func (r Response) Lacks(t testing.TB, unwanted ...string) Response {
	t.Helper()
	for _, u := range unwanted {
		if strings.Contains(r.Body, u) {
			t.Fatalf("page %s (status %d) shows %q:\n%s", r.URL, r.Status, u, r.Body)
		}
	}
	return r
}

// Want fails t unless the page came with status.
func (r Response) Want(t testing.TB, status int) Response {
	t.Helper()
	if r.Status != status {
		t.Fatalf("page %s: status %d, want %d:\n%s", r.URL, r.Status, status, r.Body)
	}
	return r
}
