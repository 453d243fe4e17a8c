package scrape

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
)

// tokens are the API tokens fakeAuth knows; "broken" fails as a database
// would.
type fakeAuth map[string]*viewer.Viewer

func (f fakeAuth) Authenticate(_ context.Context, secret string) (*viewer.Viewer, error) {
	if secret == "broken" {
		return nil, errors.New("connection refused to 10.0.0.7:5432")
	}
	if v, ok := f[secret]; ok {
		return v, nil
	}
	return nil, fault.New(fault.Unauthenticated, "invalid, expired or revoked token")
}

// The guard's every door: with and without a metrics token configured, an
// empty bearer never matches an empty token, an internal failure says
// nothing of itself, and only GET and HEAD are served.
func TestGuard(t *testing.T) {
	t.Parallel()
	auth := fakeAuth{
		"root":   {UserID: "u1", Superadmin: true},
		"admin":  {UserID: "u2", TenantID: "t1", Admin: true},
		"member": {UserID: "u3", TenantID: "t1"},
	}
	served := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "levers9_up 1\n") })
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name, token, method, authorization string
		want                               int
	}{
		{"metrics token", "0123456789abcdef", "GET", "Bearer 0123456789abcdef", http.StatusOK},
		{"metrics token, HEAD", "0123456789abcdef", "HEAD", "Bearer 0123456789abcdef", http.StatusOK},
		{"metrics token, POST", "0123456789abcdef", "POST", "Bearer 0123456789abcdef", http.StatusMethodNotAllowed},
		{"metrics token, lower-case scheme", "0123456789abcdef", "GET", "bearer 0123456789abcdef", http.StatusOK},
		{"longer than the token", "0123456789abcdef", "GET", "Bearer 0123456789abcdef0", http.StatusUnauthorized},
		{"basic auth", "0123456789abcdef", "GET", "Basic MDEyMzQ1Njc4OWFiY2RlZg==", http.StatusUnauthorized},
		{"no token configured, empty bearer", "", "GET", "Bearer ", http.StatusUnauthorized},
		{"no token configured, superadmin", "", "GET", "Bearer root", http.StatusOK},
		{"no token configured, tenant admin", "", "GET", "Bearer admin", http.StatusForbidden},
		{"member", "0123456789abcdef", "GET", "Bearer member", http.StatusForbidden},
		{"unknown token", "0123456789abcdef", "GET", "Bearer nobody", http.StatusUnauthorized},
		{"database down", "0123456789abcdef", "GET", "Bearer broken", http.StatusInternalServerError},
		{"anonymous", "0123456789abcdef", "GET", "", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := Guard{Token: tc.token, Auth: auth, Log: log}.Wrap(served)
			req := httptest.NewRequest(tc.method, "/metrics", nil)
			if tc.authorization != "" {
				req.Header.Set("Authorization", tc.authorization)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Errorf("status %d, want %d", rec.Code, tc.want)
			}
			body := rec.Body.String()
			if tc.want != http.StatusOK && (strings.Contains(body, "levers9_") || strings.Contains(body, "10.0.0.7")) {
				t.Errorf("refusal leaks %q", body)
			}
			if rec.Code == http.StatusUnauthorized && rec.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}
