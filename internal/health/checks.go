package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
)

// Flag is a condition the server sets once reached (migrations applied,
// River started); its check fails with the flag's text until then.
type Flag struct {
	set     atomic.Bool
	pending string
}

// NewFlag is an unset flag whose check shows pending until Set.
func NewFlag(pending string) *Flag { return &Flag{pending: pending} }

// Set marks the condition reached.
func (f *Flag) Set() { f.set.Store(true) }

// Check is the flag's readiness check.
func (f *Flag) Check(context.Context) error {
	if f.set.Load() {
		return nil
	}
	return Failed(f.pending, nil)
}

// Pinger is a database handle (*sql.DB).
type Pinger interface {
	PingContext(context.Context) error
}

// Ping checks that the database answers. The driver's error (which may
// name the host) goes to the log only.
func Ping(db Pinger) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := db.PingContext(ctx); err != nil {
			return Failed("unreachable", err)
		}
		return nil
	}
}

// Dir checks that dir is a directory the process can list: the local
// bucket and blob roots, which vanish when a volume is unmounted.
func Dir(dir string) func(context.Context) error {
	return func(context.Context) error {
		f, err := os.Open(dir)
		if err != nil {
			return Failed("unavailable", err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err == nil && !fi.IsDir() {
			err = fmt.Errorf("%s is not a directory", dir)
		}
		if err == nil {
			// Reading one entry proves the volume answers (a stale NFS
			// handle passes Stat).
			if _, err = f.Readdirnames(1); errors.Is(err, io.EOF) {
				err = nil
			}
		}
		if err != nil {
			return Failed("unavailable", err)
		}
		return nil
	}
}

// Stopped checks that a background worker (River's client) has not
// stopped: stopped is closed when it has.
func Stopped(stopped func() <-chan struct{}) func(context.Context) error {
	return func(context.Context) error {
		select {
		case <-stopped():
			return Failed("stopped", nil)
		default:
			return nil
		}
	}
}

// Gate serves the probes while the server starts (migrations may take
// long, and an orchestrator must not kill a process for it: /healthz
// answers, /readyz says what is pending) and everything else once Open
// hands it the server's handler. Other requests get 503 until then.
type Gate struct {
	health *Service
	next   atomic.Pointer[http.Handler]
}

// NewGate is a closed gate answering probes from s.
func NewGate(s *Service) *Gate { return &Gate{health: s} }

// Open sends every request to h from now on (h serves the probes too).
func (g *Gate) Open(h http.Handler) { g.next.Store(&h) }

func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := g.next.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	switch {
	case r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		g.health.Live(w, r)
	case r.URL.Path == "/readyz" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		g.health.Ready(w, r)
	default:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "levers9 is starting", http.StatusServiceUnavailable)
	}
}
