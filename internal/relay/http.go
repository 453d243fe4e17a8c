package relay

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
)

// ForwardedHeader marks a request one replica forwarded to another, which
// serves it or refuses it but never forwards it again.
const ForwardedHeader = "X-Levers9-Forwarded"

// Handler serves the relay's HTTP endpoints.
type Handler struct {
	Relay *Service
	Auth  *auth.Service
	// Sessions puts the dashboard session's viewer (if any) in the
	// request context: the relay accepts the session cookie as well as
	// API tokens.
	Sessions func(http.Handler) http.Handler
	// SessionCookie is the dashboard session cookie's name: it is never
	// passed to a job's service, nor set by one.
	SessionCookie string
	// Domain, when set, serves PORT-SERVICE-JOB.Domain hosts at their
	// root (see domain.go).
	Domain string
	// Snapshots records the blueprints of POST /streams/snapshot; nil:
	// the route refuses.
	Snapshots Snapshots

	once sync.Once
	tr   *http.Transport
}

// Routes adds the relay endpoints to mux.
func (h *Handler) Routes(mux *http.ServeMux) {
	mux.Handle("/relay/{job}/{service}/{port}/", h.authenticated(http.HandlerFunc(h.proxyPath)))
	mux.Handle("/relay/{job}/{service}/{port}", http.HandlerFunc(addSlash))
	mux.Handle("GET /streams/tcp/{job}/{service}/{port}", h.ownPages(h.authenticated(http.HandlerFunc(h.tcp))))
	mux.Handle("GET /streams/exec/{job}/{service}", h.ownPages(h.authenticated(http.HandlerFunc(h.exec))))
	mux.Handle("GET /streams/attach/{job}/{service}", h.ownPages(h.authenticated(http.HandlerFunc(h.attach))))
	mux.Handle("POST /streams/snapshot/{job}/{service}", h.ownOrigin(h.authenticated(http.HandlerFunc(h.snapshot))))
}

// addSlash sends /relay/J/S/P to /relay/J/S/P/, so an application's
// relative links resolve under its prefix.
func addSlash(w http.ResponseWriter, r *http.Request) {
	u := *r.URL
	u.Path += "/"
	http.Redirect(w, r, u.RequestURI(), http.StatusPermanentRedirect)
}

// authenticated puts the viewer of the request's API token, or else of
// its dashboard session, in the context; anonymous requests are refused.
func (h *Handler) authenticated(next http.Handler) http.Handler {
	withViewer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if viewer.FromContext(r.Context()) == nil {
			fail(w, fault.New(fault.Unauthenticated, "sign in first: open the dashboard, or send an API token as Authorization: Bearer TOKEN"), h.Relay)
			return
		}
		next.ServeHTTP(w, r)
	})
	sessions := withViewer
	var bySession http.Handler = sessions
	if h.Sessions != nil {
		bySession = h.Sessions(sessions)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			bySession.ServeHTTP(w, r)
			return
		}
		v, err := h.Auth.FromRequest(r)
		if err != nil {
			fail(w, err, h.Relay)
			return
		}
		withViewer.ServeHTTP(w, r.WithContext(viewer.NewContext(r.Context(), v)))
	})
}

// fail writes err as the JSON refusal every relay endpoint uses.
func fail(w http.ResponseWriter, err error, s *Service) {
	code, msg, status := fault.Internal, "internal error", http.StatusInternalServerError
	if fs := fault.Classify(err); len(fs) > 0 {
		code, msg, status = fs[0].Code, fs[0].Error(), fault.HTTPStatus(fs[0].Code)
	} else if o := fault.Outage(err); o != nil {
		code, msg, status = o.Code, o.Error(), fault.HTTPStatus(o.Code)
		fault.SetRetryAfter(w.Header(), o)
		if s != nil && s.Log != nil {
			s.Log.Warn("relay: database unreachable", "err", err)
		}
	} else if s != nil && s.Log != nil {
		s.Log.Error("relay", "err", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"code": string(code), "error": msg})
}

// stripCredentials removes what authenticates the user to levers9 from a
// request bound for a job's service: the job's code must never see them.
func (h *Handler) stripCredentials(r *http.Request) {
	r.Header.Del("Authorization")
	r.Header.Del(ForwardedHeader)
	cookies := r.Cookies()
	r.Header.Del("Cookie")
	var kept []string
	for _, c := range cookies {
		if h.SessionCookie != "" && strings.EqualFold(c.Name, h.SessionCookie) || strings.HasPrefix(c.Name, relayCookiePrefix) {
			continue
		}
		kept = append(kept, c.String())
	}
	if len(kept) > 0 {
		r.Header.Set("Cookie", strings.Join(kept, "; "))
	}
}

// relayCookiePrefix names the relay domain's own cookies (domain.go).
const relayCookiePrefix = "levers9_relay"
