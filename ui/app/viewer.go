package app

import (
	"context"
	"net/http"

	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
)

// Session keys.
const (
	keyTokenID = "token_id" // the sign-in APIToken the session acts with
	keyCSRF    = "csrf"
	keyFlash   = "flash"
)

// loadViewer puts the session's viewer in the request context, through the
// same token checks as the API: every handler then runs under the ent
// privacy rules GraphQL runs under. A session whose token was revoked or
// expired is destroyed.
func (rt *Router) loadViewer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if id := rt.Deps.Sessions.GetString(ctx, keyTokenID); id != "" {
			v, err := rt.Deps.Auth.AuthenticateSession(ctx, id)
			switch {
			case err == nil:
				ctx = viewer.NewContext(ctx, v)
			case len(fault.Classify(err)) > 0:
				_ = rt.Deps.Sessions.Destroy(ctx)
			case fault.Outage(err) != nil:
				// The session may well be fine: keep it, and ask to come back.
				rt.Fail(w, r, err)
				return
			default:
				rt.Deps.Log.Error("loading the dashboard viewer", "err", err)
				http.Error(w, "internal error", http.StatusInternalServerError)
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// WithViewer loads the session and its viewer around h, without the CSRF
// and access checks of Handle.
func (rt *Router) WithViewer(h http.Handler) http.Handler { return rt.load(rt.loadViewer(h)) }

// Viewer is the signed-in viewer of r, or nil.
func Viewer(r *http.Request) *viewer.Viewer { return viewer.FromContext(r.Context()) }

// StartSession signs the session in as the sign-in token tokenID. The
// session token is renewed first, so a token planted before sign-in
// (session fixation) is worth nothing afterwards.
func (rt *Router) StartSession(ctx context.Context, tokenID string) error {
	if err := rt.Deps.Sessions.RenewToken(ctx); err != nil {
		return err
	}
	rt.Deps.Sessions.Put(ctx, keyTokenID, tokenID)
	rt.Deps.Sessions.Put(ctx, keyCSRF, newCSRFToken())
	return nil
}

// PrivilegeChanged renews the session token and CSRF token after the
// viewer's privileges changed (a superadmin entering or leaving a tenant).
func (rt *Router) PrivilegeChanged(ctx context.Context) error {
	if err := rt.Deps.Sessions.RenewToken(ctx); err != nil {
		return err
	}
	rt.Deps.Sessions.Put(ctx, keyCSRF, newCSRFToken())
	return nil
}

// EndSession revokes the session's sign-in token and destroys the session.
func (rt *Router) EndSession(ctx context.Context) error {
	if id := rt.Deps.Sessions.GetString(ctx, keyTokenID); id != "" {
		if err := rt.Deps.Auth.EndSession(ctx, id); err != nil {
			return err
		}
	}
	return rt.Deps.Sessions.Destroy(ctx)
}

// Flash shows msg once, on the next page rendered in this session.
func (rt *Router) Flash(r *http.Request, msg string) {
	rt.Deps.Sessions.Put(r.Context(), keyFlash, msg)
}
