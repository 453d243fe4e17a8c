package imagesapi_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/imagesapi"
	"github.com/levers9/levers9/internal/wire"
)

// The routes and the checks made before the blueprints service is asked
// (which the blueprints package's tests cover through this handler).
func TestHandlerRefusesEarly(t *testing.T) {
	t.Parallel()
	api := &imagesapi.API{Log: slog.New(slog.DiscardHandler)}
	for _, tc := range []struct {
		name, method, path string
		header             map[string]string
		want               int
	}{
		{"no credential upload", "POST", "/agent/images/abc", nil, http.StatusUnauthorized},
		{"no credential download", "GET", "/agent/images/abc", nil, http.StatusUnauthorized},
		{"not a number of steps", "POST", "/agent/images/abc",
			map[string]string{"Authorization": "Bearer x", wire.StepsBuiltHeader: "many"}, http.StatusBadRequest},
		{"another route", "GET", "/agent/images/", nil, http.StatusNotFound},
		{"another method", "DELETE", "/agent/images/abc", nil, http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader("x"))
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			api.Handler().ServeHTTP(rec, req)
			if rec.Code != tc.want || !strings.Contains(rec.Body.String(), `"error"`) {
				t.Fatalf("%d %s, want %d", rec.Code, rec.Body, tc.want)
			}
		})
	}
}
