package app

import (
	"errors"
	"net/http"

	"github.com/a-h/templ"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/privacy"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/ent/user"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/layout"
)

// Render writes c with status.
func Render(w http.ResponseWriter, r *http.Request, status int, c templ.Component) error {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	return c.Render(r.Context(), w)
}

// SeeOther redirects after a successful form post.
func SeeOther(w http.ResponseWriter, r *http.Request, to string) error {
	http.Redirect(w, r, to, http.StatusSeeOther)
	return nil
}

// Frame is the layout data for r's page titled title. It pops the flash
// message, so call it once per rendered page.
func (rt *Router) Frame(r *http.Request, title string) layout.Frame {
	ctx := r.Context()
	f := layout.Frame{Title: title, Current: r.URL.Path, Version: rt.Deps.Version, CSRF: rt.CSRFToken(r)}
	f.Flash = rt.Deps.Sessions.PopString(ctx, keyFlash)
	v := viewer.FromContext(ctx)
	if v == nil {
		return f
	}
	f.SignedIn = true
	f.Inside = v.Superadmin && v.InTenant()
	// The viewer's own rights read its own user and tenant (the privacy
	// rules let a user see itself, a superadmin every tenant).
	if u, err := rt.Deps.DB.Ent.User.Query().Where(user.ID(v.UserID)).Select(user.FieldEmail).Only(ctx); err == nil {
		f.UserEmail = u.Email
	}
	if v.InTenant() {
		if t, err := rt.Deps.DB.Ent.Tenant.Query().Where(tenant.ID(v.TenantID)).Select(tenant.FieldName).Only(ctx); err == nil {
			f.TenantName = t.Name
		}
	}
	for _, n := range rt.nav {
		if n.Access.Allows(v) {
			f.Nav = append(f.Nav, layout.Link{Label: n.Label, Href: n.Href})
		}
	}
	return f
}

// Fail answers r with the error page err calls for: domain faults take the
// status fault.HTTPStatus gives their code (NOT_FOUND 404, …), a database
// outage 503 with Retry-After, a missing session goes to sign-in, anything
// else is logged and shown as an internal error without details.
func (rt *Router) Fail(w http.ResponseWriter, r *http.Request, err error) {
	status, title, msg := http.StatusInternalServerError, "Something went wrong", "internal error"
	if errors.Is(err, errOutsideTenant) && r.Method == http.MethodGet && r.Header.Get("Accept") != "text/event-stream" {
		// A superadmin outside every tenant has no tenant page to see: the
		// tenant list is where to enter one.
		rt.Flash(r, "Enter a tenant to see its "+r.URL.Path+" page: that page shows one tenant's objects.")
		http.Redirect(w, r, "/superadmin", http.StatusSeeOther)
		return
	}
	fs := fault.Classify(err)
	if errors.Is(err, privacy.Deny) {
		fs = []*fault.Error{{Code: fault.Forbidden, Message: "you may not see this"}}
	}
	if ent.IsNotFound(err) {
		fs = []*fault.Error{{Code: fault.NotFound, Message: "not found"}}
	}
	if len(fs) == 0 {
		if o := fault.Outage(err); o != nil {
			// Not a bug: the page says so and when to come back.
			rt.Deps.Log.Warn("dashboard handler: database unreachable", "err", err, "method", r.Method, "path", r.URL.Path)
			fault.SetRetryAfter(w.Header(), o)
			fs = []*fault.Error{o}
		}
	}
	if len(fs) == 0 {
		rt.Deps.Log.Error("dashboard handler", "err", err, "method", r.Method, "path", r.URL.Path)
	} else {
		msg, status = fs[0].Error(), fault.HTTPStatus(fs[0].Code)
		switch fs[0].Code {
		case fault.Unauthenticated:
			if r.Method == http.MethodGet && r.Header.Get("Accept") != "text/event-stream" {
				http.Redirect(w, r, signInURL(r), http.StatusSeeOther)
				return
			}
			title = "Sign in first"
		case fault.Forbidden:
			title = "Forbidden"
		case fault.NotFound:
			title = "Page not found"
		case fault.RateLimited:
			title = "Too many requests"
		case fault.InsufficientTokens:
			title = "Not enough tokens"
		case fault.Unavailable:
			title = "Unavailable"
		case fault.Internal:
			// title stays "Something went wrong"
		default:
			title = "Bad request"
		}
	}
	f := rt.Frame(r, title)
	if rerr := Render(w, r, status, layout.Error(f, status, msg)); rerr != nil {
		rt.Deps.Log.Debug("writing error page", "err", rerr)
	}
}

// errNoPage answers a path no route has.
var errNoPage = fault.New(fault.NotFound, "there is no page at this address")

// HandleNotFound answers every path no other route takes with the 404
// page, in the frame of the viewer's session.
func (rt *Router) HandleNotFound() {
	rt.Handle("/", Public, func(w http.ResponseWriter, r *http.Request) error { return errNoPage })
}
