package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/metrics/dbstate"
	"github.com/levers9/levers9/internal/metrics/scrape"
)

// minMetricsToken is the shortest metrics token accepted: the token opens
// /metrics on the public listener, so it must not be guessable.
const minMetricsToken = 16

// metricsConfig is where and to whom the server serves /metrics.
type metricsConfig struct {
	// Addr serves /metrics on a listener of its own, unauthenticated
	// (for an internal address); "": none.
	Addr string
	// Token opens /metrics on the public listener to Prometheus; without
	// it only superadmins' API tokens do.
	Token string
	// TenantLabel labels the database state's families by tenant slug.
	TenantLabel bool
}

func (m *metricsConfig) flags(fs *flag.FlagSet, e *envSource) {
	fs.StringVar(&m.Addr, "metrics-addr", e.str("LEVERS9_METRICS_ADDR", ""),
		"also serve /metrics, without authentication, on this address of its own, e.g. 10.0.0.5:9090; bind it to an internal interface; default none (LEVERS9_METRICS_ADDR)")
	fs.StringVar(&m.Token, "metrics-token", e.str("LEVERS9_METRICS_TOKEN", ""),
		"bearer token (16 characters or more) that opens /metrics on the public listener to Prometheus; superadmins' API tokens open it too, nobody else's; "+
			"prefer the variable: command lines are visible to other local users (LEVERS9_METRICS_TOKEN)")
	e.boolVar(fs, &m.TenantLabel, "metrics-tenant-label", "LEVERS9_METRICS_TENANT_LABEL", false,
		"label job, node and GPU gauges by tenant slug (a series per tenant and queue: mind the cardinality) (LEVERS9_METRICS_TENANT_LABEL)")
}

func (m *metricsConfig) check(tokenSource string) error {
	if m.Token != "" && len(m.Token) < minMetricsToken {
		return fmt.Errorf("%s must be at least %d characters (openssl rand -hex 24)", tokenSource, minMetricsToken)
	}
	return nil
}

// metricsHandler is /metrics of this server: the process's event metrics
// and its own database state collector, in a registry of this server's
// (tests run several servers in one process).
func metricsHandler(cfg metricsConfig, db *database.DB, subscribers func() int64, log *slog.Logger) (http.Handler, error) {
	reg, err := scrape.NewRegistry(dbstate.New(db, log, dbstate.Config{TenantLabel: cfg.TenantLabel, Subscribers: subscribers}))
	if err != nil {
		return nil, err
	}
	return scrape.Handler(reg, log), nil
}

// serveMetrics serves h at /metrics on addr, a listener of its own with
// no authentication: operators bind it to an internal address.
func serveMetrics(ctx context.Context, addr string, h http.Handler, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for metrics on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: time.Minute,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("serving metrics", "err", err)
		}
	}()
	log.Info("metrics listening", "addr", ln.Addr().String())
	return func() { _ = hs.Close() }, nil
}
