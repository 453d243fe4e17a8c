package session

import (
	"net/http"
	"time"

	"github.com/alexedwards/scs/v2"
)

// CookieName is the dashboard's session cookie.
const CookieName = "levers9_session"

// Defaults: a session ends after an hour without requests, and after the
// sign-in token's lifetime however busy it is.
const (
	DefaultIdleTimeout = time.Hour
	DefaultLifetime    = 12 * time.Hour
)

// NewManager returns a session manager on store. Zero timeouts take the
// defaults.
func NewManager(store scs.Store, idle, lifetime time.Duration) *scs.SessionManager {
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	if lifetime <= 0 {
		lifetime = DefaultLifetime
	}
	sm := scs.New()
	sm.Store = store
	sm.IdleTimeout = idle
	sm.Lifetime = lifetime
	sm.Cookie.Name = CookieName
	sm.Cookie.HttpOnly = true
	sm.Cookie.SameSite = http.SameSiteLaxMode
	sm.Cookie.Path = "/"
	sm.Cookie.Persist = false // a browser session cookie: closing the browser signs out
	return sm
}

// LoadAndSave is scs's LoadAndSave with a Secure flag decided per request
// (TLS, or a public URL that is https behind a proxy), which scs only knows
// as a fixed setting.
func LoadAndSave(sm *scs.SessionManager, secure func(*http.Request) bool, onErr func(http.ResponseWriter, *http.Request, error)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Add("Vary", "Cookie")
			var token string
			if c, err := r.Cookie(sm.Cookie.Name); err == nil {
				token = c.Value
			}
			ctx, err := sm.Load(r.Context(), token)
			if err != nil {
				onErr(w, r, err)
				return
			}
			r = r.WithContext(ctx)
			sw := &writer{ResponseWriter: w, commit: func() { commit(sm, w, r, secure(r), onErr) }}
			next.ServeHTTP(sw, r)
			sw.once()
		})
	}
}

// commit saves a modified session and sets (or clears) its cookie.
func commit(sm *scs.SessionManager, w http.ResponseWriter, r *http.Request, secure bool, onErr func(http.ResponseWriter, *http.Request, error)) {
	ctx := r.Context()
	c := &http.Cookie{
		Name: sm.Cookie.Name, Path: sm.Cookie.Path, HttpOnly: true,
		SameSite: sm.Cookie.SameSite, Secure: secure,
	}
	switch sm.Status(ctx) {
	case scs.Modified:
		token, _, err := sm.Commit(ctx)
		if err != nil {
			onErr(w, r, err)
			return
		}
		c.Value = token
	case scs.Destroyed:
		c.Expires = time.Unix(1, 0)
		c.MaxAge = -1
	default:
		return
	}
	w.Header().Add("Set-Cookie", c.String())
	w.Header().Add("Cache-Control", `no-cache="Set-Cookie"`)
}

// writer commits the session just before the first byte of the response,
// while headers can still be set.
type writer struct {
	http.ResponseWriter
	commit func()
	done   bool
}

func (w *writer) once() {
	if !w.done {
		w.done = true
		w.commit()
	}
}

func (w *writer) WriteHeader(code int) { w.once(); w.ResponseWriter.WriteHeader(code) }

func (w *writer) Write(b []byte) (int, error) { w.once(); return w.ResponseWriter.Write(b) }

// Unwrap lets http.ResponseController reach Flush and deadlines (log streams).
func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }
