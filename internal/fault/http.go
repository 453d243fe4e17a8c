package fault

import "net/http"

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
