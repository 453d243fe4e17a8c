package signin

import (
	"net"
	"net/http"
	"strconv"

	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/ui/app"
)

// Register adds the sign-in, sign-out and start page routes.
func Register(rt *app.Router) {
	h := &handlers{rt: rt}
	rt.Handle("GET /{$}", app.Public, h.start)
	rt.Handle("GET /signin", app.Public, h.show)
	rt.Handle("POST /signin", app.Public, h.signIn)
	rt.Handle("POST /signout", app.Public, h.signOut)
}

type handlers struct{ rt *app.Router }

// start sends each viewer to its first page.
func (h *handlers) start(w http.ResponseWriter, r *http.Request) error {
	v := app.Viewer(r)
	switch {
	case v == nil:
		return app.SeeOther(w, r, "/signin")
	case v.Superadmin && !v.InTenant():
		return app.SeeOther(w, r, "/superadmin")
	}
	return app.SeeOther(w, r, "/jobs")
}

func (h *handlers) show(w http.ResponseWriter, r *http.Request) error {
	if app.Viewer(r) != nil {
		return app.SeeOther(w, r, auth.LocalPath(r.URL.Query().Get("next")))
	}
	return app.Render(w, r, http.StatusOK, page(h.rt.Frame(r, "Sign in"), form{Next: auth.LocalPath(r.URL.Query().Get("next"))}))
}

func (h *handlers) signIn(w http.ResponseWriter, r *http.Request) error {
	email, password := r.PostFormValue("email"), r.PostFormValue("password")
	in := form{Email: email, Next: auth.LocalPath(r.PostFormValue("next"))}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	_, tok, err := h.rt.Deps.Auth.SignIn(r.Context(), email, password, host)
	if err != nil {
		fs := fault.Classify(err)
		if len(fs) == 0 {
			return err
		}
		in.Error = fs[0].Message
		status := fault.HTTPStatus(fs[0].Code) // 401, or 429 with Retry-After
		if fs[0].Code == fault.RateLimited {
			if secs, ok := fs[0].Details["retryAfter"].(int); ok {
				w.Header().Set("Retry-After", strconv.Itoa(secs))
			}
		}
		return app.Render(w, r, status, page(h.rt.Frame(r, "Sign in"), in))
	}
	if err := h.rt.StartSession(r.Context(), tok.ID); err != nil {
		return err
	}
	return app.SeeOther(w, r, in.Next)
}

func (h *handlers) signOut(w http.ResponseWriter, r *http.Request) error {
	if err := h.rt.EndSession(r.Context()); err != nil {
		return err
	}
	return app.SeeOther(w, r, "/signin")
}
