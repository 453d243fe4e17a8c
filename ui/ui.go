// Package ui is the server-rendered dashboard (templ). Handlers are thin:
// they call the same domain functions as GraphQL, as the signed-in viewer,
// so the same ent privacy rules decide what each page shows.
package ui

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/levers9/levers9/internal/audit"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/buckets"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/functions"
	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/queues"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/ui/admin"
	"github.com/levers9/levers9/ui/app"
	"github.com/levers9/levers9/ui/apps"
	uiblueprints "github.com/levers9/levers9/ui/blueprints"
	"github.com/levers9/levers9/ui/files"
	uijobs "github.com/levers9/levers9/ui/jobs"
	uinodes "github.com/levers9/levers9/ui/nodes"
	uisandboxes "github.com/levers9/levers9/ui/sandboxes"
	uisecrets "github.com/levers9/levers9/ui/secrets"
	"github.com/levers9/levers9/ui/session"
	"github.com/levers9/levers9/ui/signin"
	"github.com/levers9/levers9/ui/static"
	"github.com/levers9/levers9/ui/submit"
	"github.com/levers9/levers9/ui/superadmin"
	"github.com/levers9/levers9/ui/tokens"
)

// Config is what the dashboard needs from the server.
type Config struct {
	DB      *database.DB
	Auth    *auth.Service
	Tenancy *tenancy.Service
	Jobs    *jobs.Service
	Files   *buckets.Files
	Nodes   *nodes.Service
	Bus     *notify.Bus
	// Functions answers the serverless pages' rules (why a call waits);
	// nil leaves those out.
	Functions *functions.Service
	// Secrets creates and deletes secrets (internal/secrets.Service); nil
	// shows the Secrets page read-only.
	Secrets   uisecrets.Service
	Log       *slog.Logger
	PublicURL string
	// RelayDomain is the operator's relay domain (--relay-domain), or "".
	RelayDomain string
	MaxUpload   int64
	Version     string
	// IdleTimeout and Lifetime bound a session; zero takes the defaults
	// (session.DefaultIdleTimeout, session.DefaultLifetime).
	IdleTimeout, Lifetime time.Duration
}

// Dashboard is the registered dashboard.
type Dashboard struct{ rt *app.Router }

// WithViewer puts the viewer of the request's dashboard session (if any)
// in its context, for other front doors that accept the session cookie
// (the relay). It checks no CSRF token: such handlers accept only
// WebSocket upgrades (which check Origin) and relayed requests.
func (d *Dashboard) WithViewer(h http.Handler) http.Handler { return d.rt.WithViewer(h) }

// Routes registers the dashboard on mux. It creates the sessions table
// when missing and purges expired sessions until ctx ends.
func Routes(ctx context.Context, mux *http.ServeMux, cfg Config) (*Dashboard, error) {
	var store *session.Store
	// Under the start-up lock: replicas starting together would race to
	// create the table (PostgreSQL's IF NOT EXISTS is not atomic).
	err := cfg.DB.Exclusive(ctx, func() (err error) {
		store, err = session.NewStore(ctx, cfg.DB.SQL, cfg.DB.Dialect)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("dashboard sessions: %w", err)
	}
	go store.PurgeEvery(ctx, 10*time.Minute, cfg.Log)
	lifetime := cfg.Lifetime
	if lifetime <= 0 || lifetime > auth.SessionTTL {
		lifetime = auth.SessionTTL // the sign-in token expires then anyway
	}
	rt := app.NewRouter(mux, &app.Deps{
		DB: cfg.DB, Auth: cfg.Auth, Tenancy: cfg.Tenancy, Jobs: cfg.Jobs, Files: cfg.Files, Nodes: cfg.Nodes, Bus: cfg.Bus,
		Ledger: &ledger.Service{DB: cfg.DB}, Queues: &queues.Service{Ent: cfg.DB.Ent}, Log: cfg.Log.With("component", "dashboard"),
		Logs:      &joblog.Service{DB: cfg.DB, Bus: cfg.Bus, Log: cfg.Log.With("component", "dashboard")},
		Audit:     &audit.Service{Ent: cfg.DB.Ent},
		PublicURL: cfg.PublicURL, MaxUpload: cfg.MaxUpload,
		Version: cfg.Version, RelayDomain: cfg.RelayDomain,
		Sessions: session.NewManager(store, cfg.IdleTimeout, lifetime),
	})
	rt.HandleRaw("GET /static/", static.Handler())
	signin.Register(rt)
	uijobs.Register(rt)
	apps.Register(rt, cfg.Functions)
	uisecrets.Register(rt, cfg.Secrets)
	uisandboxes.Register(rt)
	uiblueprints.Register(rt)
	submit.Register(rt)
	tokens.Register(rt)
	files.Register(rt)
	superadmin.Register(rt)
	uinodes.Register(rt)
	admin.Register(rt)
	// Last and least specific: every other path gets the 404 page.
	rt.HandleNotFound()
	return &Dashboard{rt: rt}, nil
}
