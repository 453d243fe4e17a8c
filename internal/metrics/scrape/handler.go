// Package scrape serves levers9's metrics over HTTP: the handler that
// gathers the process's event metrics (package metrics) with a server's
// own collectors, and the guard that admits scrapes on the public
// listener.
package scrape

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/metrics"
	"github.com/levers9/levers9/internal/viewer"
)

// maxScrapes bounds the scrapes served at once: each one queries the
// database (SQLite has one connection), so a burst of them waits its turn
// with 503s rather than piling up.
const maxScrapes = 4

// Handler serves the event metrics of this process together with server's
// (a registry of this server's own collectors, such as the database
// state's), in Prometheus' text format or OpenMetrics as the scraper asks.
// A family that fails is logged and left out; the rest are served.
func Handler(server prometheus.Gatherer, log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(prometheus.Gatherers{metrics.Events(), server}, promhttp.HandlerOpts{
		ErrorLog:            errorLog{log},
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: maxScrapes,
	})
}

// NewRegistry returns a registry of this server's own collectors: one
// per server, so that several servers in one process (tests) never
// register a collector twice.
func NewRegistry(cs ...prometheus.Collector) (*prometheus.Registry, error) {
	r := prometheus.NewRegistry()
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			return nil, fmt.Errorf("registering metrics: %w", err)
		}
	}
	return r, nil
}

type errorLog struct{ log *slog.Logger }

func (l errorLog) Println(v ...any) { l.log.Warn("serving metrics", "err", fmt.Sprint(v...)) }

// Authenticator turns an API token into its viewer (auth.Service).
type Authenticator interface {
	Authenticate(ctx context.Context, secret string) (*viewer.Viewer, error)
}

// Guard admits scrapes on the public listener. Metrics say how busy the
// platform is, which queues and GPU types exist and how the server is
// built: nothing a tenant, let alone an anonymous caller, should read.
// So only two bearers pass: the operator's metrics token (what Prometheus
// is given; compared in constant time) and a superadmin's API token (an
// operator looking by hand). Anyone else gets 401 (no or a bad token) or
// 403 (a valid token of anyone but a superadmin) and a body that says only
// that. A separate --metrics-addr listener needs no Guard: operators bind
// it to an internal address.
type Guard struct {
	// Token is the metrics token; "": none, only superadmins pass.
	Token string
	Auth  Authenticator
	Log   *slog.Logger
}

// Wrap returns h behind the guard.
func (g Guard) Wrap(h http.Handler) http.Handler {
	want := sha256.Sum256([]byte(g.Token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		secret, ok := auth.ParseBearer(r.Header.Get("Authorization"))
		if !ok || secret == "" {
			unauthorized(w)
			return
		}
		// Hashes of equal length, so the comparison takes the same time
		// whatever the guess's length.
		got := sha256.Sum256([]byte(secret))
		if g.Token != "" && subtle.ConstantTimeCompare(got[:], want[:]) == 1 {
			h.ServeHTTP(w, r)
			return
		}
		v, err := g.Auth.Authenticate(r.Context(), secret)
		switch {
		case err != nil && len(fault.Classify(err)) > 0:
			unauthorized(w)
		case err != nil:
			g.Log.Error("authenticating a metrics scrape", "err", err)
			http.Error(w, "internal error", http.StatusInternalServerError)
		case v == nil || !v.Superadmin:
			http.Error(w, "forbidden: metrics need the metrics token or a superadmin's API token", http.StatusForbidden)
		default:
			h.ServeHTTP(w, r)
		}
	})
}

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="levers9 metrics"`)
	http.Error(w, "unauthorized: send the metrics token or a superadmin's API token as Authorization: Bearer TOKEN", http.StatusUnauthorized)
}
