package ui_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
)

// The live estimate names each problem's field in words with the element
// it belongs next to, never a spec path alone; the form opened fresh shows
// no problem before the user acts.
func TestDashboardEstimateProblemsInWords(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		b := e.browser()
		b.signIn(memberEmail)
		code, page := b.get("/submit")
		if code != http.StatusOK {
			t.Fatalf("GET /submit: %d", code)
		}
		if i := strings.Index(page, `id="estimate-problems"`); i < 0 || strings.Contains(page[i:i+strings.Index(page[i:], "</ul>")], "<li>") {
			t.Error("the fresh form shows problems before the user acted")
		}
		for _, f := range []string{`id="interactive"`, `id="svc0-image"`, `id="svc0-gpuTypes"`} {
			if !strings.Contains(page, f) {
				t.Errorf("the form has no %s field", f)
			}
		}
		tests := []struct {
			name, field, value string
			wantID, wantLabel  string
		}{
			{"not a number", "services[0].cpu", "lots", "svc0-cpu", "Service 1 CPUs"},
			{"bad service name", "services[0].name", "Main Service", "svc0-name", "Service 1 name"},
			{"bad minutes", "minutes", "soon", "minutes", "Estimate for minutes"},
		}
		for _, tt := range tests {
			q := url.Values{"queue": {"default"}, "services": {"1"}, "services[0].name": {"main"},
				"services[0].command": {"true"}, "services[0].cpu": {"1"}, "services[0].memoryMiB": {"64"}}
			q.Set(tt.field, tt.value)
			code, body := b.get("/submit/estimate?" + q.Encode())
			if code != http.StatusOK {
				t.Fatalf("%s: estimate %d", tt.name, code)
			}
			var out struct {
				Problems []struct{ Field, ID, Label, Message string }
				GPUTypes []string
			}
			if err := json.Unmarshal([]byte(body), &out); err != nil {
				t.Fatalf("%s: %v in %s", tt.name, err, body)
			}
			found := false
			for _, p := range out.Problems {
				if p.Field == tt.field && p.ID == tt.wantID && p.Label == tt.wantLabel && p.Message != "" {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: problems %+v; want one at %s labelled %q", tt.name, out.Problems, tt.wantID, tt.wantLabel)
			}
			if out.GPUTypes == nil {
				t.Errorf("%s: no gpuTypes list in the answer", tt.name)
			}
		}
	})
}
