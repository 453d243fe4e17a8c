package graph

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/levers9/levers9/internal/fault"
)

// A GraphQL answer is 200 whatever its errors say. One that met a
// database outage is 503 with Retry-After instead, so that clients (and
// proxies, load balancers) that look at the status know to try again
// rather than report a bug; its body still says UNAVAILABLE.

// outageKey holds the request's *atomic.Int64: the seconds of Retry-After
// an outage asked for, 0 while none did.
type outageKey struct{}

// markOutage records in ctx's request that an error of its answer is the
// database outage o. Fields resolve concurrently, hence the atomic.
func markOutage(ctx context.Context, o *fault.Error) {
	if m, ok := ctx.Value(outageKey{}).(*atomic.Int64); ok {
		m.Store(int64(max(o.RetryAfter(), 1)))
	}
}

// outageStatus answers 503 with Retry-After in place of 200 when the
// error presenter marked an outage. Streams keep their status: it is sent
// before any error can be known.
func outageStatus(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if streaming(r) {
			h.ServeHTTP(w, r)
			return
		}
		m := new(atomic.Int64)
		ow := &outageWriter{ResponseWriter: w, mark: m}
		h.ServeHTTP(ow, r.WithContext(context.WithValue(r.Context(), outageKey{}, m)))
	})
}

// outageWriter changes the status when the header is written: gqlgen
// writes it after the operation ran, so every error was presented by then.
type outageWriter struct {
	http.ResponseWriter
	mark  *atomic.Int64
	wrote bool
}

func (w *outageWriter) WriteHeader(status int) {
	if !w.wrote {
		w.wrote = true
		if secs := w.mark.Load(); secs > 0 && status == http.StatusOK {
			w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
			status = http.StatusServiceUnavailable
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *outageWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *outageWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
