package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"time"
)

// httpLimits bound how long and how much a client may take to send a
// request. There is no whole-request ReadTimeout or WriteTimeout: uploads
// may take hours and log streams and subscriptions stay open for days.
type httpLimits struct {
	// ReadHeaderTimeout is the time to send a request's header.
	ReadHeaderTimeout time.Duration
	// BodyTimeout and MinBodyRate bound a request body: it must arrive
	// within BodyTimeout plus one second per MinBodyRate bytes received, so
	// a large upload at any real speed keeps going and a trickle (one byte
	// every few seconds) is cut off after BodyTimeout.
	BodyTimeout time.Duration
	MinBodyRate int64 // bytes per second
	// IdleTimeout is how long a kept-alive connection waits for its next
	// request.
	IdleTimeout    time.Duration
	MaxHeaderBytes int
}

var defaultHTTPLimits = httpLimits{
	ReadHeaderTimeout: 10 * time.Second,
	BodyTimeout:       20 * time.Second,
	MinBodyRate:       4 << 10,
	IdleTimeout:       2 * time.Minute,
	MaxHeaderBytes:    64 << 10,
}

func (l *httpLimits) flags(fs *flag.FlagSet, e *envSource) {
	d := defaultHTTPLimits
	l.MaxHeaderBytes = d.MaxHeaderBytes
	e.durationVar(fs, &l.ReadHeaderTimeout, "http-header-timeout", "LEVERS9_HTTP_HEADER_TIMEOUT", d.ReadHeaderTimeout,
		"time a client has to send a request header (LEVERS9_HTTP_HEADER_TIMEOUT)")
	e.durationVar(fs, &l.BodyTimeout, "http-body-timeout", "LEVERS9_HTTP_BODY_TIMEOUT", d.BodyTimeout,
		"time a client has to send a request body, plus 1s per --http-min-body-rate bytes sent (LEVERS9_HTTP_BODY_TIMEOUT)")
	e.int64Var(fs, &l.MinBodyRate, "http-min-body-rate", "LEVERS9_HTTP_MIN_BODY_RATE", d.MinBodyRate,
		"bytes per second a request body must keep up on average once --http-body-timeout is spent; 0: no rate, the timeout is the whole body's (LEVERS9_HTTP_MIN_BODY_RATE)")
	e.durationVar(fs, &l.IdleTimeout, "http-idle-timeout", "LEVERS9_HTTP_IDLE_TIMEOUT", d.IdleTimeout,
		"time an idle kept-alive connection stays open (LEVERS9_HTTP_IDLE_TIMEOUT)")
}

func (l httpLimits) check() error {
	if l.ReadHeaderTimeout <= 0 || l.BodyTimeout <= 0 || l.IdleTimeout <= 0 || l.MinBodyRate < 0 {
		return errors.New("--http-header-timeout, --http-body-timeout and --http-idle-timeout must be positive, --http-min-body-rate not negative")
	}
	return nil
}

// newHTTPServer is the server's http.Server with limits l around h.
func newHTTPServer(ctx context.Context, l httpLimits, h http.Handler) *http.Server {
	return &http.Server{
		Handler:           bodyDeadline(l, h),
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
}

// bodyDeadline puts a read deadline on every request with a body, through
// http.ResponseController, moved on as the body arrives. When it passes,
// reading fails, the request's context ends and the connection is closed.
// Requests without a body (page loads, log streams, WebSocket upgrades)
// get none: the server's background read on them would end them.
func bodyDeadline(l httpLimits, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			b := &deadlineBody{ReadCloser: r.Body, rc: http.NewResponseController(w), l: l, start: time.Now()}
			if b.extend() == nil {
				r.Body = b
			}
		}
		h.ServeHTTP(w, r)
	})
}

type deadlineBody struct {
	io.ReadCloser
	rc    *http.ResponseController
	l     httpLimits
	start time.Time
	n     int64
	done  bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.done {
		return n, err
	}
	b.n += int64(n)
	switch {
	case errors.Is(err, io.EOF):
		// The whole body is in: what follows (a long response, a stream)
		// is no longer the client's to hurry.
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	case err == nil && n > 0:
		_ = b.extend()
	}
	return n, err
}

func (b *deadlineBody) extend() error {
	d := b.start.Add(b.l.BodyTimeout)
	if b.l.MinBodyRate > 0 {
		d = d.Add(time.Duration(float64(b.n) / float64(b.l.MinBodyRate) * float64(time.Second)))
	}
	return b.rc.SetReadDeadline(d)
}
