package relay

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/relayaddr"
	"github.com/levers9/levers9/internal/viewer"
)

// The relay domain serves port PORT of service SERVICE of job JOB at the
// root of its own host, PORT-SERVICE-JOB.DOMAIN (relayaddr.Host), so
// applications that need the root path work, and a job's pages run on an
// origin apart from the dashboard's (no sandbox there).
//
// Browsers have no dashboard session on those hosts (its cookie is
// host-only), so a browser signs in by handoff: the relay host sends it to
// PUBLIC/relay/auth?to=URL, where the session is; that checks the viewer
// may reach the job and sends it back to HOST/.levers9/auth?ticket=T; the
// ticket (single use, AuthPath's host only, ticketTTL) becomes a relay
// cookie of that host naming the session's sign-in token, which is checked
// again on every request: signing out or revoking the token ends it.

// Relay domain names and bounds.
const (
	// AuthPath is where a relay host redeems a ticket; a job's service
	// never sees requests for it.
	AuthPath = "/.levers9/auth"
	// relayCookie holds a relay host's sign-in (never passed to, nor set
	// by, a job's service: its name starts with relayCookiePrefix).
	relayCookie = relayCookiePrefix
	// ticketTTL is how long a handoff ticket may wait to be redeemed: one
	// redirect's time.
	ticketTTL = 60 * time.Second
	// keyPrefix names relay records in the store, apart from dashboard
	// sessions (scs tokens never contain ':').
	keyPrefix = "levers9_relay:"
)

// Store keeps expiring records shared by replicas (the dashboard's session
// store, ui/session.Store, fits): tickets and relay cookies.
type Store interface {
	CommitCtx(ctx context.Context, key string, b []byte, expiry time.Time) error
	FindCtx(ctx context.Context, key string) ([]byte, bool, error)
	DeleteCtx(ctx context.Context, key string) error
	// TakeCtx deletes the record and returns its data, atomically.
	TakeCtx(ctx context.Context, key string) ([]byte, bool, error)
}

// Domain serves the relay domain (Relay.Domain) in front of the server's
// other routes, and the dashboard side of its sign-in handoff.
type Domain struct {
	Relay *Handler
	// Store keeps tickets and relay cookies.
	Store Store
	// PublicURL is the dashboard's URL: the handoff starts there, and an
	// https one means the relay hosts are served over https too (behind a
	// proxy that ends TLS).
	PublicURL string
	// Lifetime bounds a relay cookie; zero: auth.SessionTTL (the sign-in
	// token expires then anyway).
	Lifetime time.Duration
	Now      func() time.Time
}

// Routes adds the dashboard side of the handoff, GET /relay/auth?to=URL.
func (d *Domain) Routes(mux *http.ServeMux) {
	if d.Relay.Domain == "" {
		return
	}
	h := http.Handler(http.HandlerFunc(d.handoff))
	if d.Relay.Sessions != nil {
		h = d.Relay.Sessions(h)
	}
	mux.Handle("GET /relay/auth", h)
}

// Front sends requests for relay domain hosts to the relay, the others to
// next.
func (d *Domain) Front(next http.Handler) http.Handler {
	if d.Relay.Domain == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		job, svc, port, ok := relayaddr.ParseHost(r.Host, d.Relay.Domain)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		d.serve(w, r, job, svc, port)
	})
}

// serve relays r on a relay host, signing the browser in first.
func (d *Domain) serve(w http.ResponseWriter, r *http.Request, job, svc, port string) {
	h := d.Relay
	if r.URL.Path == AuthPath {
		d.redeem(w, r)
		return
	}
	var v *viewer.Viewer
	var err error
	if r.Header.Get("Authorization") != "" {
		v, err = h.Auth.FromRequest(r)
	} else {
		v, err = d.cookieViewer(r)
	}
	if err != nil {
		fail(w, err, h.Relay)
		return
	}
	if v == nil {
		d.signIn(w, r)
		return
	}
	ctx := viewer.NewContext(r.Context(), v)
	r = r.WithContext(ctx)
	t, err := h.Relay.Resolve(ctx, job, svc, port)
	if err != nil {
		fail(w, err, h.Relay)
		return
	}
	if h.forward(w, r, t) {
		return
	}
	h.proxy(w, r, t, "", r.URL.Path, r.URL.RawPath, false)
}

// signIn starts the handoff for a browser's page load; anything else (a
// script's request, a WebSocket) is refused, as a redirect would lose it.
func (d *Domain) signIn(w http.ResponseWriter, r *http.Request) {
	if (r.Method != http.MethodGet && r.Method != http.MethodHead) || r.Header.Get("Upgrade") != "" {
		fail(w, fault.New(fault.Unauthenticated, "sign in first: open this address in a browser signed in to the dashboard, or send an API token as Authorization: Bearer TOKEN"), d.Relay.Relay)
		return
	}
	to := d.scheme(r) + "://" + r.Host + r.URL.RequestURI()
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, strings.TrimRight(d.PublicURL, "/")+"/relay/auth?to="+url.QueryEscape(to), http.StatusSeeOther)
}

// handoff serves GET /relay/auth?to=URL on the dashboard's origin: a
// signed-in viewer who may reach the job of URL's host (a relay host) is
// sent there with a ticket.
func (d *Domain) handoff(w http.ResponseWriter, r *http.Request) {
	h := d.Relay
	to := r.URL.Query().Get("to")
	u, err := url.Parse(to)
	var job, svc, port string
	ok := err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.User == nil && u.Opaque == ""
	if ok {
		job, svc, port, ok = relayaddr.ParseHost(u.Host, h.Domain)
	}
	if !ok {
		fail(w, fault.Invalid("to", "must be an address on the relay domain %s, not %.200q", h.Domain, to), h.Relay)
		return
	}
	v := viewer.FromContext(r.Context())
	if v == nil || v.TokenID == "" {
		next := "/relay/auth?to=" + url.QueryEscape(to)
		http.Redirect(w, r, "/signin?next="+url.QueryEscape(auth.LocalPath(next)), http.StatusSeeOther)
		return
	}
	if _, err := h.Relay.Resolve(r.Context(), job, svc, port); err != nil {
		fail(w, err, h.Relay)
		return
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	host := strings.ToLower(u.Host)
	secret, err := d.put(r.Context(), "ticket", record{Token: v.TokenID, Host: host, Path: auth.LocalPath(path)}, ticketTTL)
	if err != nil {
		fail(w, err, h.Relay)
		return
	}
	// Over https, the ticket never travels in clear, whatever `to` says.
	scheme := u.Scheme
	if d.scheme(r) == "https" {
		scheme = "https"
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, scheme+"://"+u.Host+AuthPath+"?ticket="+url.QueryEscape(secret), http.StatusSeeOther)
}

// redeem serves HOST/.levers9/auth?ticket=T: a ticket for this host, not
// expired nor used, of a live session, becomes this host's relay cookie.
func (d *Domain) redeem(w http.ResponseWriter, r *http.Request) {
	h := d.Relay
	refused := fault.New(fault.Unauthenticated, "this sign-in link is invalid, used or expired; open the address again")
	rec, err := d.take(r.Context(), "ticket", r.URL.Query().Get("ticket"), r.Host)
	if err == nil && rec == nil {
		err = refused
	}
	if err == nil {
		_, err = h.Auth.AuthenticateSession(r.Context(), rec.Token)
	}
	if err != nil {
		fail(w, err, h.Relay)
		return
	}
	secret, err := d.put(r.Context(), "cookie", record{Token: rec.Token, Host: rec.Host}, d.lifetime())
	if err != nil {
		fail(w, err, h.Relay)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: relayCookie, Value: secret, Path: "/", HttpOnly: true,
		Secure: d.scheme(r) == "https", SameSite: http.SameSiteLaxMode})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, auth.LocalPath(rec.Path), http.StatusSeeOther)
}

// cookieViewer is the viewer of r's relay cookie, nil without a valid one
// (a signed-out session's cookie is forgotten).
func (d *Domain) cookieViewer(r *http.Request) (*viewer.Viewer, error) {
	c, err := r.Cookie(relayCookie)
	if err != nil || c.Value == "" {
		return nil, nil
	}
	rec, err := d.find(r.Context(), "cookie", c.Value, r.Host)
	if err != nil || rec == nil {
		return nil, err
	}
	v, err := d.Relay.Auth.AuthenticateSession(r.Context(), rec.Token)
	if len(fault.Classify(err)) > 0 {
		if err := d.Store.DeleteCtx(r.Context(), key("cookie", c.Value)); err != nil {
			return nil, err
		}
		return nil, nil
	}
	return v, err
}

// record is a ticket or a relay cookie as stored.
type record struct {
	Token   string    `json:"token"` // the session's sign-in token ID
	Host    string    `json:"host"`  // the relay host it is good for
	Path    string    `json:"path,omitempty"`
	Expires time.Time `json:"expires"`
}

// key names a record by kind and its secret's hash: the store holds no
// secret a reader could use.
func key(kind, secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return keyPrefix + kind + ":" + hex.EncodeToString(sum[:])
}

// put stores rec for ttl under a new secret, which it returns.
func (d *Domain) put(ctx context.Context, kind string, rec record, ttl time.Duration) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("relay %s: %w", kind, err)
	}
	secret := base64.RawURLEncoding.EncodeToString(b)
	rec.Expires = d.now().Add(ttl)
	data, err := json.Marshal(rec)
	if err != nil {
		return "", fmt.Errorf("relay %s: %w", kind, err)
	}
	if err := d.Store.CommitCtx(ctx, key(kind, secret), data, rec.Expires); err != nil {
		return "", fmt.Errorf("storing a relay %s: %w", kind, err)
	}
	return secret, nil
}

// find is the unexpired record of kind under secret for host, or nil.
func (d *Domain) find(ctx context.Context, kind, secret, host string) (*record, error) {
	if secret == "" || len(secret) > 100 {
		return nil, nil
	}
	data, ok, err := d.Store.FindCtx(ctx, key(kind, secret))
	if err != nil || !ok {
		return nil, err
	}
	return d.check(kind, data, host)
}

// take is find that also deletes the record, in one statement: a ticket
// is used once, whatever the outcome, even when two replicas redeem it at
// the same moment.
func (d *Domain) take(ctx context.Context, kind, secret, host string) (*record, error) {
	if secret == "" || len(secret) > 100 {
		return nil, nil
	}
	data, ok, err := d.Store.TakeCtx(ctx, key(kind, secret))
	if err != nil {
		return nil, fmt.Errorf("using a relay %s: %w", kind, err)
	}
	if !ok {
		return nil, nil
	}
	return d.check(kind, data, host)
}

// check decodes a record and accepts it for host while unexpired.
func (d *Domain) check(kind string, data []byte, host string) (*record, error) {
	var rec record
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("reading a relay %s: %w", kind, err)
	}
	if !strings.EqualFold(rec.Host, host) || !d.now().Before(rec.Expires) {
		return nil, nil
	}
	return &rec, nil
}

// scheme is the scheme browsers use for r: https when it came over TLS or
// the public URL is https (TLS ended by a proxy).
func (d *Domain) scheme(r *http.Request) string {
	if r.TLS != nil || strings.HasPrefix(strings.ToLower(d.PublicURL), "https:") {
		return "https"
	}
	return "http"
}

func (d *Domain) lifetime() time.Duration {
	if d.Lifetime > 0 {
		return d.Lifetime
	}
	return auth.SessionTTL
}

func (d *Domain) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}
