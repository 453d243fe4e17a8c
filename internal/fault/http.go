package fault

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
)

// statuses is the HTTP status of each code, for every front door that
// answers over HTTP (the files API, the dashboard, GraphQL's refusals
// before an operation runs). A code missing here fails TestHTTPStatus.
var statuses = map[Code]int{
	Unauthenticated:    http.StatusUnauthorized,
	Forbidden:          http.StatusForbidden,
	NotFound:           http.StatusNotFound,
	BadUserInput:       http.StatusBadRequest,
	InsufficientTokens: http.StatusPaymentRequired,
	RateLimited:        http.StatusTooManyRequests,
	Unavailable:        http.StatusServiceUnavailable,
	Internal:           http.StatusInternalServerError,
}

// HTTPStatus is the HTTP status that answers an error with code c; an
// unknown code is an internal error.
func HTTPStatus(c Code) int {
	if s, ok := statuses[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Final reports whether a request refused with code c fails the same way
// when sent again unchanged: a client error (4xx) other than RATE_LIMITED.
// Clients retry the others (UNAVAILABLE, INTERNAL, RATE_LIMITED).
func (c Code) Final() bool {
	s := HTTPStatus(c)
	return s >= 400 && s < 500 && s != http.StatusTooManyRequests
}

// StatusError is an error that answers HTTP with a status of its own
// rather than its code's (a blob over its limit is 413, not 400).
type StatusError interface {
	error
	HTTPStatus() int
}

// WriteJSON answers err as {"error": {"code", "message"}}, the shape of
// every JSON API beside GraphQL (files, blobs, images, secrets). A fault
// says its code and message, a database outage UNAVAILABLE with
// Retry-After; anything else is logged under what and answered "internal
// error", so no query or path leaks.
func WriteJSON(w http.ResponseWriter, log *slog.Logger, what string, err error) {
	code, msg, status := Internal, "internal error", http.StatusInternalServerError
	if fs := Classify(err); len(fs) > 0 {
		code, msg, status = fs[0].Code, fs[0].Error(), HTTPStatus(fs[0].Code)
	} else if o := Outage(err); o != nil {
		code, msg, status = o.Code, o.Error(), HTTPStatus(o.Code)
		SetRetryAfter(w.Header(), o)
		if log != nil {
			log.Warn(what, "err", err)
		}
	} else if log != nil {
		log.Error(what, "err", err)
	}
	var se StatusError
	if errors.As(err, &se) {
		status = se.HTTPStatus()
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": msg}})
}
