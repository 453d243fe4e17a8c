package graph_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/graph"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/buckets"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/queues"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/workers"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// env is a GraphQL server on a fresh database, wired like `levers9 server`
// but served in-process.
type env struct {
	t       testing.TB
	db      *database.DB
	auth    *auth.Service
	tenancy *tenancy.Service
	jobs    *jobs.Service
	logs    *joblog.Service
	bus     *notify.Bus
	srv     *httptest.Server
}

// testPassword is every test user's password.
const testPassword = fixture.Password

// newEnv returns a fresh env; tune adjusts the resolver before it serves.
func newEnv(t testing.TB, url string, tune ...func(*graph.Resolver)) *env {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("LEVERS9_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	db, err := database.Open(ctx, url, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Exclusive(ctx, func() error { return db.Migrate(ctx) }); err != nil {
		t.Fatal(err)
	}
	rc, err := workers.NewClients(db, workers.Deps{Ent: db.Ent, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	// Signals go through PostgreSQL when there is one, as in production.
	e := &env{t: t, db: db, bus: notify.New(db.Pool, log)}
	t.Cleanup(e.bus.Close)
	e.auth = auth.NewService(db.Ent, log, nil)
	e.tenancy = &tenancy.Service{DB: db, Log: log, LocalStorageRoot: t.TempDir()}
	e.jobs = &jobs.Service{DB: db, Log: log, Now: time.Now, Schedule: workers.InsertScheduleJob(rc), Bus: e.bus,
		ScheduleQueue: func(ctx context.Context, tx *sql.Tx, queueID string) error {
			return workers.InsertScheduleQueue(ctx, rc, tx, queueID)
		}}
	res := &graph.Resolver{
		DB: db, Ent: db.Ent, Log: log, Auth: e.auth, Tenancy: e.tenancy, JobService: e.jobs,
		// Tests create S3 storages at unused local addresses.
		StorageService: buckets.Storages{LocalRoot: e.tenancy.LocalStorageRoot, AllowPrivateS3: true},
		Files:          &buckets.Files{Ent: db.Ent, AllowPrivateS3: true},
		Ledger:         &ledger.Service{DB: db},
		QueueService:   &queues.Service{Ent: db.Ent},
		NodeService:    &nodes.Service{Ent: db.Ent, Now: time.Now, PublicURL: "http://levers9.test"},
		Logs:           &joblog.Service{DB: db, Bus: e.bus, Log: log},
	}
	for _, f := range tune {
		f(res)
	}
	e.logs = res.Logs
	e.srv = httptest.NewServer(graph.Authenticate(e.auth, log, graph.NewHandler(res)))
	t.Cleanup(e.srv.Close)
	return e
}

// tenant is a tenant made for a test, with an admin and a member.
type tenant struct {
	ent                     *ent.Tenant
	admin, member           *ent.User
	adminToken, memberToken string
	mainEnv                 string
}

// newTenant creates tenant slug with admin@slug.test and member@slug.test.
func (e *env) newTenant(slug string) *tenant {
	e.t.Helper()
	tn := fixture.NewTenant(e.t, e.db, fixture.TenantOptions{
		Slug: slug, Name: strings.ToUpper(slug), LocalStorageRoot: e.tenancy.LocalStorageRoot,
	})
	member := tn.AddMember(e.t, "member")
	return &tenant{ent: tn.Ent, admin: tn.Admin, member: member,
		adminToken: tn.Token(e.t, tn.Admin), memberToken: tn.Token(e.t, member), mainEnv: tn.Env}
}

// superadmin creates a superadmin and returns a session token for it.
func (e *env) superadmin() string {
	e.t.Helper()
	ctx := viewer.SystemContext(context.Background())
	hash, err := auth.HashPassword(testPassword)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.db.Ent.User.Create().SetEmail("root@ops.test").SetPasswordHash(hash).SetSuperadmin(true).Save(ctx); err != nil {
		e.t.Fatal(err)
	}
	r := e.gql("", `mutation($e:String!,$p:String!){ signIn(email:$e,password:$p){ token } }`, vars{"e": "root@ops.test", "p": testPassword})
	r.ok(e.t)
	var out struct{ SignIn struct{ Token string } }
	r.decode(e.t, &out)
	return out.SignIn.Token
}

type vars = map[string]any

type gqlError struct {
	Message    string         `json:"message"`
	Extensions map[string]any `json:"extensions"`
}

type response struct {
	Status int
	Data   json.RawMessage `json:"data"`
	Errors []gqlError      `json:"errors"`
}

func (r response) ok(t testing.TB) {
	t.Helper()
	if len(r.Errors) > 0 {
		t.Fatalf("unexpected errors: %+v", r.Errors)
	}
}

func (r response) code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	c, _ := r.Errors[0].Extensions["code"].(string)
	return c
}

func (r response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Data, v); err != nil {
		t.Fatalf("decoding %s: %v", r.Data, err)
	}
}

// gql sends one GraphQL request with token (none when empty).
func (e *env) gql(token, query string, v vars) response {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": v})
	return e.post(token, body)
}

func (e *env) post(token string, body []byte) response {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var r response
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &r); err != nil {
		e.t.Fatalf("status %d, body %q: %v", resp.StatusCode, raw, err)
	}
	r.Status = resp.StatusCode
	return r
}
