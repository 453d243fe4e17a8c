package app

import (
	"net/http"
	"net/url"

	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
)

// Access is who may reach a route. Handlers still act as the viewer, so
// ent privacy rules filter every object on top of this coarse check: an
// object of another tenant is NOT_FOUND whatever the access level.
type Access int

// The access levels, each implying a signed-in viewer except Public.
const (
	// Public routes need no session (sign-in, static files).
	Public Access = iota
	// SignedIn routes take any signed-in user, superadmins outside a tenant too.
	SignedIn
	// Member routes need a viewer acting inside a tenant.
	Member
	// Admin routes need a tenant admin (or a superadmin inside a tenant).
	Admin
	// Superadmin routes need a superadmin, inside a tenant or not.
	Superadmin
)

// Allows reports whether v may reach a route at access a.
func (a Access) Allows(v *viewer.Viewer) bool {
	switch a {
	case Public:
		return true
	case SignedIn:
		return v != nil
	case Member:
		return v.InTenant()
	case Admin:
		return v.InTenant() && v.Admin
	case Superadmin:
		return v != nil && v.Superadmin
	}
	return false
}

// errSignIn asks Fail to send the browser to the sign-in page.
var errSignIn = fault.New(fault.Unauthenticated, "sign in first")

// errOutsideTenant is a superadmin asking for a tenant page from outside.
var errOutsideTenant = fault.New(fault.Forbidden, "enter a tenant first: this page shows one tenant's objects")

func (rt *Router) authorize(r *http.Request, a Access) error {
	v := viewer.FromContext(r.Context())
	switch {
	case a.Allows(v):
		return nil
	case v == nil:
		return errSignIn
	case v.Superadmin && !v.InTenant() && (a == Member || a == Admin):
		return errOutsideTenant
	}
	return fault.New(fault.Forbidden, "you may not see this page")
}

// signInURL is the sign-in page returning to r's page afterwards.
func signInURL(r *http.Request) string {
	next := auth.LocalPath(r.URL.RequestURI())
	if r.Method != http.MethodGet || next == "/" {
		return "/signin"
	}
	return "/signin?next=" + url.QueryEscape(next)
}
