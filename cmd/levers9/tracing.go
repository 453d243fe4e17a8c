package main

import (
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/levers9/levers9/internal/tracing"
)

// checkOTLPEndpoint checks --otlp-endpoint (of the server or the agent),
// naming where it came from; "" (no tracing) is fine.
func checkOTLPEndpoint(endpoint, source string) error {
	if endpoint == "" {
		return nil
	}
	if _, err := tracing.ParseEndpoint(endpoint); err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	return nil
}

// startTracing starts exporting the spans of service (tracing.ServerService
// or tracing.AgentService) to endpoint; with no endpoint the tracer is nil
// and tracing costs nothing. stop flushes what is buffered (bounded: a
// collector that is down must not hold up an exit).
func startTracing(endpoint, service string, log *slog.Logger) (tracer trace.Tracer, stop func(), err error) {
	return startTracingTo(endpoint, nil, service, log)
}

// startTracingTo is startTracing with spans going to exp when set (tests:
// the SDK's in-memory exporter, each span exported as it ends).
func startTracingTo(endpoint string, exp tracing.Exporter, service string, log *slog.Logger) (tracer trace.Tracer, stop func(), err error) {
	cfg := tracing.Config{Endpoint: endpoint, Service: service, Version: version}
	var p *tracing.Provider
	if exp != nil {
		p = tracing.NewSynced(exp, cfg)
	} else if p, err = tracing.New(cfg); err != nil {
		return nil, nil, err
	}
	if endpoint != "" {
		log.Info("tracing", "service", service, "otlpEndpoint", endpoint)
	}
	return p.Tracer(), func() {
		if err := p.ShutdownWithin(5 * time.Second); err != nil {
			log.Warn("flushing traces", "err", err)
		}
	}, nil
}
