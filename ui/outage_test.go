package ui_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
)

// TestDatabaseOutage: while PostgreSQL is stopped, a signed-in page is 503
// with Retry-After (sessions live in the database), not a 500 that reads
// as a bug; the same session works again once it is back.
func TestDatabaseOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A cluster of its own: stopping the shared one would fail every other test.
	c, err := dbtest.StartCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	e := newEnv(t, c.URL)
	b := e.browser()
	b.signIn(adminEmail)
	if st, body := b.get("/jobs"); st != http.StatusOK {
		t.Fatalf("GET /jobs with the database up: %d %s", st, body)
	}
	if err := c.Halt(ctx); err != nil {
		t.Fatal(err)
	}
	res, body := b.do(http.MethodGet, "/jobs", nil)
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != "3" {
		t.Fatalf("GET /jobs with the database down: %d (Retry-After %q) %s, want 503 with Retry-After 3",
			res.StatusCode, res.Header.Get("Retry-After"), body)
	}
	if err := c.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	// A pooled connection from before the restart may fail one request
	// more, as 503 too.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		st, body := b.get("/jobs")
		if st == http.StatusOK {
			break
		}
		if st != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("GET /jobs after the database came back: %d %s", st, body)
		}
	}
}
