// Package app is the dashboard's server side shared by every page area:
// the router with its middleware (sessions, the viewer, CSRF, access
// levels, security headers), error pages and the frame data the layout
// renders. Page packages register their routes on a Router.
package app

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/alexedwards/scs/v2"

	"github.com/levers9/levers9/internal/audit"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/buckets"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/queues"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/ui/session"
)

// Deps is what dashboard handlers call: the same services GraphQL uses.
type Deps struct {
	DB        *database.DB
	Auth      *auth.Service
	Tenancy   *tenancy.Service
	Jobs      *jobs.Service
	Files     *buckets.Files
	Nodes     *nodes.Service
	Ledger    *ledger.Service
	Queues    *queues.Service
	Logs      *joblog.Service
	Audit     *audit.Service
	Bus       *notify.Bus
	Log       *slog.Logger
	Sessions  *scs.SessionManager
	PublicURL string // the URL users reach the server at; https makes cookies Secure
	MaxUpload int64  // largest file upload in bytes
	Version   string
	// RelayDomain, when set, is where service ports open
	// (PORT-SERVICE-JOB.RelayDomain); else under /relay/ on PublicURL.
	RelayDomain string
}

// HandlerFunc is a dashboard handler. A returned error becomes an error
// page with the status its fault code maps to (see Fail).
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Router registers dashboard routes on a mux, each behind the middleware
// chain and an access level.
type Router struct {
	Deps *Deps
	mux  *http.ServeMux
	nav  []NavEntry
	load func(http.Handler) http.Handler
}

// NavEntry is one link of the top navigation, shown to viewers at Access.
type NavEntry struct {
	Label  string
	Href   string
	Access Access
}

// NewRouter returns a router registering on mux.
func NewRouter(mux *http.ServeMux, d *Deps) *Router {
	rt := &Router{Deps: d, mux: mux}
	rt.load = session.LoadAndSave(d.Sessions, rt.secure, func(w http.ResponseWriter, r *http.Request, err error) {
		// Sessions live in the database: an outage fails them first.
		if o := fault.Outage(err); o != nil {
			d.Log.Warn("dashboard session: database unreachable", "err", err, "path", r.URL.Path)
			fault.SetRetryAfter(w.Header(), o)
			http.Error(w, o.Message, fault.HTTPStatus(o.Code))
			return
		}
		d.Log.Error("dashboard session", "err", err, "path", r.URL.Path)
		http.Error(w, "internal error", http.StatusInternalServerError)
	})
	return rt
}

// Handle registers h for pattern (a ServeMux pattern with its method, e.g.
// "GET /jobs/{id}"), reachable only at access. Every route gets the same
// chain: security headers, session, viewer, CSRF check for unsafe methods,
// the access check.
func (rt *Router) Handle(pattern string, access Access, h HandlerFunc) {
	var inner http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := rt.authorize(r, access); err != nil {
			rt.Fail(w, r, err)
			return
		}
		if err := h(w, r); err != nil {
			rt.Fail(w, r, err)
		}
	})
	inner = rt.checkCSRF(inner)
	inner = rt.loadViewer(inner)
	inner = rt.load(inner)
	rt.mux.Handle(pattern, securityHeaders(inner))
}

// HandleRaw registers a plain handler (static files) with security headers
// but no session.
func (rt *Router) HandleRaw(pattern string, h http.Handler) {
	rt.mux.Handle(pattern, securityHeaders(h))
}

// Nav adds a link to the top navigation, in registration order.
func (rt *Router) Nav(label, href string, access Access) {
	rt.nav = append(rt.nav, NavEntry{Label: label, Href: href, Access: access})
}

// secure reports whether cookies of r must be Secure: served over TLS, or
// behind a proxy at an https public URL.
func (rt *Router) secure(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(strings.ToLower(rt.Deps.PublicURL), "https://")
}

// publicOrigin is scheme://host of the public URL, or "".
func (rt *Router) publicOrigin() string {
	u, err := url.Parse(rt.Deps.PublicURL)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// securityHeaders keep pages out of frames and scripts to our own files.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		h.ServeHTTP(w, r)
	})
}
