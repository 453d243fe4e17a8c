package fault

import (
	"net/http"
	"strconv"

	"github.com/levers9/levers9/internal/database/outage"
)

// OutageRetryAfter is the seconds a client is told to wait after the
// database could not be reached: a restart or failover takes seconds, and
// clients that come back soon see the database back soon.
const OutageRetryAfter = 3

// Outage is the fault to answer instead of INTERNAL when err means the
// database cannot be reached now (outage.Is): UNAVAILABLE, asking to retry
// after OutageRetryAfter seconds; nil for any other error. It is not part
// of Classify, whose callers take a fault for the user's own doing (a form
// shows it, a session ends on it).
func Outage(err error) *Error {
	if !outage.Is(err) {
		return nil
	}
	return &Error{Code: Unavailable, Message: "the database cannot be reached now; try again shortly",
		Details: map[string]any{"retryAfter": OutageRetryAfter}}
}

// RetryAfter is the seconds e asks the client to wait before trying again
// (Details["retryAfter"], set by rate limits and outages), or 0.
func (e *Error) RetryAfter() int {
	if s, ok := e.Details["retryAfter"].(int); ok && s > 0 {
		return s
	}
	return 0
}

// SetRetryAfter sets h's Retry-After to e's RetryAfter, when it has one.
func SetRetryAfter(h http.Header, e *Error) {
	if s := e.RetryAfter(); s > 0 {
		h.Set("Retry-After", strconv.Itoa(s))
	}
}
