// Package runnerapi is the runner API: the HTTP/1.1 JSON front door a
// function's runner (python -m levers9.runner) calls through its agent's
// socket. The stream it arrives on names the container (Identify); every
// rule is internal/functions'.
package runnerapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/levers9/levers9/internal/blobs"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/functions"
	"github.com/levers9/levers9/internal/wire"
)

// Blobs keeps the payload blobs of the container's tenant (blobs.Store).
type Blobs interface {
	Put(ctx context.Context, kind, hash string, r io.Reader, size int64) (bool, error)
	Open(ctx context.Context, hash string) (io.ReadCloser, int64, error)
}

// API serves the runner API for fn's containers.
type API struct {
	fn    *functions.Service
	blobs Blobs
	log   *slog.Logger
}

// New returns the runner API; blobs may be nil (blob requests are then
// refused UNAVAILABLE).
func New(fn *functions.Service, blobs Blobs, log *slog.Logger) *API {
	return &API{fn: fn, blobs: blobs, log: log}
}

type runnerKey struct{}

// Identify names the container of a stream node nodeID's agent opened
// for it; the context it returns carries it to every request on the
// stream. Its errors are the domain's fault errors.
func (a *API) Identify(ctx context.Context, nodeID string, open wire.RunnerOpen) (context.Context, error) {
	r, err := a.fn.RunnerFor(ctx, nodeID, open)
	if err != nil {
		return nil, err
	}
	return WithRunner(ctx, r), nil
}

// WithRunner is ctx naming runner r (Identify's; tests use it directly).
func WithRunner(ctx context.Context, r *functions.Runner) context.Context {
	return context.WithValue(ctx, runnerKey{}, r)
}

func runnerOf(ctx context.Context) *functions.Runner {
	r, _ := ctx.Value(runnerKey{}).(*functions.Runner)
	return r
}

// Body limits. A claim carries the outcomes of up to concurrency + 64
// calls, each result up to functions.InlineLimit inline (larger ones are
// blobs), and a map up to functions.MaxMapItems items.
const (
	maxSmallBody = 64 << 10
	maxCallBody  = 2 * functions.InlineLimit
	maxLargeBody = 128 << 20
	// MaxWait caps a long poll (waitMs).
	MaxWait = time.Minute
)

// Handler serves the runner API's routes.
func (a *API) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /runner/v1/function", a.function)
	mux.HandleFunc("POST /runner/v1/claim", a.claim)
	mux.HandleFunc("PUT /runner/v1/blobs/{hash}", a.putBlob)
	mux.HandleFunc("GET /runner/v1/blobs/{hash}", a.getBlob)
	mux.HandleFunc("POST /runner/v1/call", a.call)
	mux.HandleFunc("POST /runner/v1/put", a.put)
	mux.HandleFunc("POST /runner/v1/map", a.mapItems)
	mux.HandleFunc("POST /runner/v1/await", a.await)
	mux.HandleFunc("POST /runner/v1/map-results", a.mapResults)
	mux.HandleFunc("POST /runner/v1/cancel", a.cancel)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		a.fail(w, r, fault.New(fault.NotFound, "no runner API route %s %s", r.Method, r.URL.Path))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if runnerOf(r.Context()) == nil {
			a.fail(w, r, fault.New(fault.Unauthenticated, "this connection does not come from a function's container"))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// decode reads a JSON body of at most limit bytes into v, strictly: an
// unknown field, a second value or a wrong type is the runner's bug and is
// refused rather than ignored.
func decode(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &tooLarge{limit: limit}
		}
		return fault.Invalid("body", "bad JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fault.Invalid("body", "bad JSON: more than one value")
	}
	return nil
}

// tooLarge is a body over its limit: 413.
type tooLarge struct{ limit int64 }

func (e *tooLarge) Error() string { return e.Unwrap().Error() }
func (e *tooLarge) Unwrap() error {
	return fault.Invalid("body", "the request body is larger than %d bytes", e.limit)
}

// wait is a waitMs field as a duration, capped at MaxWait.
func wait(ms int64) (time.Duration, error) {
	if ms < 0 {
		return 0, fault.Invalid("waitMs", "must not be negative")
	}
	return min(time.Duration(ms)*time.Millisecond, MaxWait), nil
}

func (a *API) reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		a.log.Debug("runner API: writing an answer", "err", err)
	}
}

// fail answers err: a fault with its status and code, a database outage
// as 503 UNAVAILABLE with Retry-After, anything else as an internal error
// (logged, not shown).
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	body := errorBody{Code: fault.Internal, Message: "internal error"}
	status := http.StatusInternalServerError
	if fs := fault.Classify(err); len(fs) > 0 {
		body = errorBody{Code: fs[0].Code, Message: fs[0].Error(), Field: fs[0].Field}
		status = fault.HTTPStatus(fs[0].Code)
		var tl *tooLarge
		var btl *blobs.TooLargeError
		if errors.As(err, &tl) || errors.As(err, &btl) {
			status = http.StatusRequestEntityTooLarge
		}
	} else if o := fault.Outage(err); o != nil {
		body, status = errorBody{Code: o.Code, Message: o.Error()}, fault.HTTPStatus(o.Code)
		fault.SetRetryAfter(w.Header(), o)
		a.log.Warn("runner API: database unreachable", "method", r.Method, "path", r.URL.Path, "err", err)
	} else if r.Context().Err() == nil {
		a.log.Error("runner API", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	a.reply(w, status, map[string]errorBody{"error": body})
}

type errorBody struct {
	Code    fault.Code `json:"code"`
	Message string     `json:"message"`
	Field   string     `json:"field,omitempty"`
}
