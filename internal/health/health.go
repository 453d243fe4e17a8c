// Package health answers the probes of load balancers and Kubernetes:
// /healthz (the process answers) and /readyz (it can do its work: the
// checks the server registers pass and it is not draining).
package health

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Service's Timeout and CacheFor.
const (
	DefaultTimeout  = 2 * time.Second
	DefaultCacheFor = time.Second
)

// Failure is a check's error: Public is what /readyz shows (anyone may
// ask it, so never a DSN, path or driver message), Err what the log gets.
type Failure struct {
	Public string
	Err    error
}

func (f *Failure) Error() string {
	if f.Err == nil {
		return f.Public
	}
	return f.Public + ": " + f.Err.Error()
}

func (f *Failure) Unwrap() error { return f.Err }

// Failed is a check's error showing public on /readyz and logging err.
func Failed(public string, err error) error { return &Failure{Public: public, Err: err} }

// Check is one readiness condition; Run returns nil when it holds.
type Check struct {
	Name string
	Run  func(context.Context) error
}

// Report is the body of /readyz.
type Report struct {
	// Status is "ok" or "unavailable".
	Status string `json:"status"`
	// Checks is "ok" or the failure's public text, by check name.
	Checks  map[string]string `json:"checks"`
	Version string            `json:"version"`
	Commit  string            `json:"commit"`
}

// OK reports whether every check passed.
func (r Report) OK() bool { return r.Status == "ok" }

// Service runs the readiness checks. The zero value (with Version and
// Commit set) is ready to use; Add the checks before serving.
type Service struct {
	Version, Commit string
	Log             *slog.Logger
	// Timeout bounds one round of checks; CacheFor is how long a round's
	// results answer later probes. Probes are anonymous: without the
	// cache each one would be a database round trip an attacker can
	// multiply. Zero: the defaults; a negative CacheFor caches nothing.
	Timeout, CacheFor time.Duration
	Now               func() time.Time

	checks   []Check
	draining atomic.Bool

	mu      sync.Mutex // one round at a time; guards the fields below
	last    map[string]string
	lastAt  time.Time
	failing map[string]bool // logged as failing, so a failure is logged once
}

// Add registers a check; call it before serving.
func (s *Service) Add(name string, run func(context.Context) error) {
	s.checks = append(s.checks, Check{Name: name, Run: run})
}

// Drain makes /readyz fail from now on, whatever the checks say: the
// process is stopping and load balancers should send it no new requests.
func (s *Service) Drain() { s.draining.Store(true) }

// Draining reports whether Drain was called.
func (s *Service) Draining() bool { return s.draining.Load() }

// Check runs the checks (or reuses a round younger than CacheFor) and
// reports them with the draining state.
func (s *Service) Check(ctx context.Context) Report {
	results := s.results(ctx)
	r := Report{Status: "ok", Checks: make(map[string]string, len(results)+1), Version: s.Version, Commit: s.Commit}
	for name, v := range results {
		r.Checks[name] = v
	}
	r.Checks["draining"] = "ok"
	if s.Draining() {
		r.Checks["draining"] = "the server is shutting down"
	}
	for _, v := range r.Checks {
		if v != "ok" {
			r.Status = "unavailable"
		}
	}
	return r
}

func (s *Service) results(ctx context.Context) map[string]string {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	cacheFor := s.CacheFor
	if cacheFor == 0 {
		cacheFor = DefaultCacheFor
	}
	if s.last != nil && cacheFor > 0 && now.Sub(s.lastAt) < cacheFor && now.Sub(s.lastAt) >= 0 {
		return s.last
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	// The round is the server's, not the caller's: a probe that hangs
	// up must not turn into a cached failure.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	errs := make([]error, len(s.checks))
	var wg sync.WaitGroup
	for i, c := range s.checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = run(ctx, c)
		}()
	}
	wg.Wait()
	out := make(map[string]string, len(s.checks))
	if s.failing == nil {
		s.failing = map[string]bool{}
	}
	for i, c := range s.checks {
		out[c.Name] = "ok"
		if errs[i] != nil {
			out[c.Name] = publicText(errs[i])
		}
		s.logChange(c.Name, errs[i])
	}
	s.last, s.lastAt = out, s.now()
	return out
}

// run runs c, turning a panic into a failure (a probe must not take the
// server down) and a missed deadline into "timed out".
func run(ctx context.Context, c Check) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = Failed("check failed", errors.New("panic in readiness check"))
		}
	}()
	err = c.Run(ctx)
	if err != nil && ctx.Err() != nil {
		var f *Failure
		if !errors.As(err, &f) {
			return Failed("timed out", err)
		}
	}
	return err
}

// publicText is what /readyz shows of err: a Failure's public text, else
// a fixed "failed" (an arbitrary error may quote a DSN or a path).
func publicText(err error) string {
	var f *Failure
	if errors.As(err, &f) && f.Public != "" {
		return f.Public
	}
	return "failed"
}

func (s *Service) logChange(name string, err error) {
	log := s.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	switch {
	case err != nil && !s.failing[name]:
		s.failing[name] = true
		log.Warn("readiness check failing", "check", name, "err", err)
	case err == nil && s.failing[name]:
		delete(s.failing, name)
		log.Info("readiness check passing again", "check", name)
	}
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Live answers /healthz: 200 "ok" while the process serves HTTP. It does
// no work, so a busy database never makes an orchestrator restart the
// process (that is what /readyz is for).
func (s *Service) Live(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = io.WriteString(w, "ok\n")
}

// Ready answers /readyz: 200 and the report when every check passes,
// 503 and the report otherwise.
func (s *Service) Ready(w http.ResponseWriter, r *http.Request) {
	rep := s.Check(r.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !rep.OK() {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(rep)
}

// Routes registers GET /healthz and GET /readyz on mux.
func (s *Service) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", s.Live)
	mux.HandleFunc("GET /readyz", s.Ready)
}
