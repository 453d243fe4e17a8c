package ui_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
)

// The Files page leads admins to the bucket form (with its reach shown
// before saving); members, who cannot create buckets, are told who can.
func TestDashboardFilesNewBucket(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		for _, tc := range []struct {
			email      string
			link, hint bool
		}{{adminEmail, true, false}, {memberEmail, false, true}} {
			b := e.browser()
			b.signIn(tc.email)
			code, body := b.get("/buckets")
			if code != http.StatusOK {
				t.Fatalf("%s: GET /buckets: %d", tc.email, code)
			}
			if got := strings.Contains(body, `href="/admin/storages#new-bucket"`); got != tc.link {
				t.Errorf("%s: the new bucket link shown: %v; want %v", tc.email, got, tc.link)
			}
			if got := strings.Contains(body, "tenant admins create buckets"); got != tc.hint {
				t.Errorf("%s: told who creates buckets: %v; want %v", tc.email, got, tc.hint)
			}
		}
	})
}
