// Package tracing sets up OpenTelemetry traces for the server and the
// agent, and carries a job's trace between them as a W3C traceparent.
//
// Tracing is off unless an OTLP endpoint is configured. Off, the services
// hold a nil trace.Tracer and skip every span: the hot paths allocate
// nothing for tracing and jobs store no traceparent.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Service names in the resource of every span, so a trace shows which
// process did what.
const (
	ServerService = "levers9-server"
	AgentService  = "levers9-agent"
)

// Scope is the instrumentation scope of levers9's own spans.
const Scope = "github.com/levers9/levers9"

// Attributes of levers9's spans. IDs are fine on spans (a span is one
// event, not a time series); the agent spells the same keys.
const (
	JobID   = attribute.Key("levers9.job.id")
	NodeID  = attribute.Key("levers9.node.id")
	QueueID = attribute.Key("levers9.queue.id")
	Attempt = attribute.Key("levers9.job.attempt")
	// Code is the error code a caller was refused with (BAD_USER_INPUT…).
	Code = attribute.Key("levers9.error.code")
)

// Config says where spans go.
type Config struct {
	// Endpoint is the OTLP/HTTP URL (http or https) of a collector; ""
	// turns tracing off. A URL without a path gets /v1/traces, the path
	// collectors serve traces at.
	Endpoint string
	Service  string // ServerService or AgentService
	Version  string
}

// Exporter is where finished spans go (the OTLP exporter, or in tests the
// SDK's in-memory one).
type Exporter = sdktrace.SpanExporter

// Provider is a configured tracer provider, or none when tracing is off.
type Provider struct {
	tp *sdktrace.TracerProvider
}

// New starts exporting spans to cfg.Endpoint; with no endpoint it returns
// a Provider whose Tracer is nil (tracing off). Nothing is dialled here:
// the exporter connects when it first sends, so a collector that is down
// costs dropped spans, never a server that will not start.
func New(cfg Config) (*Provider, error) {
	if cfg.Endpoint == "" {
		return &Provider{}, nil
	}
	endpoint, err := ParseEndpoint(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	return NewWithExporter(exp, cfg), nil
}

// NewWithExporter is New with the exporter given (tests pass the SDK's
// in-memory one). Spans are batched: exporting never blocks a request.
func NewWithExporter(exp sdktrace.SpanExporter, cfg Config) *Provider {
	return newProvider(sdktrace.WithBatcher(exp), cfg)
}

// NewSynced is NewWithExporter exporting each span as it ends, so a test
// sees a span as soon as it ended.
func NewSynced(exp sdktrace.SpanExporter, cfg Config) *Provider {
	return newProvider(sdktrace.WithSyncer(exp), cfg)
}

func newProvider(export sdktrace.TracerProviderOption, cfg Config) *Provider {
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", cfg.Service),
		attribute.String("service.version", cfg.Version),
	))
	if err != nil {
		// Only conflicting schema URLs fail a merge, and ours has none.
		res = resource.NewSchemaless(attribute.String("service.name", cfg.Service))
	}
	return &Provider{tp: sdktrace.NewTracerProvider(export, sdktrace.WithResource(res),
		// Every trace is recorded, whatever a caller's traceparent says:
		// a client must not be able to hide its operations from the
		// operator by sending "not sampled".
		sdktrace.WithSampler(sdktrace.AlwaysSample()))}
}

// Tracer is the tracer levers9's packages start spans with; nil when
// tracing is off (the services then skip spans altogether).
func (p *Provider) Tracer() trace.Tracer {
	if p == nil || p.tp == nil {
		return nil
	}
	return p.tp.Tracer(Scope)
}

// Shutdown exports the spans still buffered and stops the exporter,
// within ctx.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil || p.tp == nil {
		return nil
	}
	return p.tp.Shutdown(ctx)
}

// ShutdownWithin is Shutdown bounded by d, for deferring at exit.
func (p *Provider) ShutdownWithin(d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return p.Shutdown(ctx)
}

// ParseEndpoint checks an OTLP/HTTP endpoint URL and completes it with
// /v1/traces when it has no path.
func ParseEndpoint(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", errors.New("the OTLP endpoint must be an http:// or https:// URL, like http://collector:4318")
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("the OTLP endpoint must be a URL without credentials, query or fragment")
	}
	if strings.TrimSuffix(u.Path, "/") == "" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

var traceContext = propagation.TraceContext{}

// TraceParent is the W3C traceparent of the span in ctx; "" when ctx has
// no valid span (tracing off).
func TraceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	return c["traceparent"]
}

// WithParent is ctx with the span of traceparent as its remote parent;
// ctx unchanged when traceparent is empty or not a valid traceparent.
func WithParent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return traceContext.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// Fail marks span as failed with err (nil: nothing).
func Fail(span trace.Span, err error) {
	if err == nil {
		return
	}
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}
