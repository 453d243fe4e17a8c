package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"sync/atomic"
)

// Flag is a condition the server reaches (migrations applied, River
// started) and may lose again (River stopped); its check fails with the
// flag's text while the condition does not hold.
type Flag struct {
	failing atomic.Pointer[string] // nil: the condition holds
}

// NewFlag is a flag whose check fails with pending until Set.
func NewFlag(pending string) *Flag {
	f := &Flag{}
	f.failing.Store(&pending)
	return f
}

// Set marks the condition reached.
func (f *Flag) Set() { f.failing.Store(nil) }

// Clear marks the condition lost, for reason.
func (f *Flag) Clear(reason string) { f.failing.Store(&reason) }

// Check is the flag's readiness check.
func (f *Flag) Check(context.Context) error {
	if p := f.failing.Load(); p != nil {
		return Failed(*p, nil)
	}
	return nil
}

// All is one check made of several, run in turn: the first failure is
// its failure.
func All(checks ...func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		for _, c := range checks {
			if err := c(ctx); err != nil {
				return err
			}
		}
		return nil
	}
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

// Dir checks that dir is a directory the process can list: the data
// directory and the blob root, which vanish when a volume is unmounted.
func Dir(dir string) func(context.Context) error { return dirCheck(dir, false) }

// DirIfExists is Dir for a directory made on first use (the local bucket
// root): missing, it passes.
func DirIfExists(dir string) func(context.Context) error { return dirCheck(dir, true) }

func dirCheck(dir string, optional bool) func(context.Context) error {
	return func(context.Context) error {
		f, err := os.Open(dir)
		if optional && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
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
