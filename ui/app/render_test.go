package app

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/alexedwards/scs/v2"

	"github.com/levers9/levers9/internal/fault"
)

// TestFailStatus: the error page answers with the status fault.HTTPStatus
// gives the fault's code, as the files API does (UNAVAILABLE was 400 here).
func TestFailStatus(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err    error
		status int
	}{
		{fault.New(fault.Unauthenticated, "sign in"), http.StatusUnauthorized},
		{fault.New(fault.Forbidden, "no"), http.StatusForbidden},
		{fault.Missing("job j1"), http.StatusNotFound},
		{fault.Invalid("name", "too long"), http.StatusBadRequest},
		{fault.New(fault.InsufficientTokens, "poor"), http.StatusPaymentRequired},
		{fault.New(fault.RateLimited, "slow down"), http.StatusTooManyRequests},
		{fault.New(fault.Unavailable, "node offline"), http.StatusServiceUnavailable},
		{fault.New(fault.Internal, "broken"), http.StatusInternalServerError},
		{errors.New("not for users"), http.StatusInternalServerError},
	}
	mux := http.NewServeMux()
	rt := NewRouter(mux, &Deps{Log: slog.New(slog.DiscardHandler), Sessions: scs.New()})
	for i, tc := range cases {
		rt.Handle("GET /fail/"+string(rune('a'+i)), Public, func(http.ResponseWriter, *http.Request) error { return tc.err })
	}
	for i, tc := range cases {
		req := httptest.NewRequest(http.MethodGet, "/fail/"+string(rune('a'+i)), nil)
		// A stream is answered, not sent to sign-in, when unauthenticated.
		req.Header.Set("Accept", "text/event-stream")
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code != tc.status {
			t.Errorf("%v: status %d, want %d", tc.err, rec.Code, tc.status)
		}
	}
}
