package ui_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/viewer"
)

// waitEvent is the first event of events whose data holds every want,
// failing the test when the stream ends or ctx does first.
func waitEvent(ctx context.Context, t *testing.T, events <-chan sseEvent, name string, want ...string) sseEvent {
	t.Helper()
	for {
		select {
		case <-ctx.Done():
			t.Fatalf("no %s event with %q before the deadline", name, want)
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("the stream ended before a %s event with %q", name, want)
			}
			if ev.event != name {
				continue
			}
			all := true
			for _, w := range want {
				all = all && strings.Contains(ev.data, w)
			}
			if all {
				return ev
			}
		}
	}
}

// The jobs table follows its rows live: a job cancelled elsewhere shows
// CANCELLED with who did it (by email) without a reload, a job submitted
// since shows as a notice, and another tenant's job ID patches nothing.
func TestDashboardJobsListLive(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		mine := e.submit(e.admin, "watched", "sleep 600")
		theirs := e.submit(e.other, "secret", "sleep 600")
		b := e.browser()
		b.signIn(adminEmail)
		code, page := b.get("/jobs")
		if code != http.StatusOK || !strings.Contains(page, `data-live="/jobs/live?`) || !strings.Contains(page, adminEmail) {
			t.Fatalf("GET /jobs: %d; want the table with its live stream and the owner's email", code)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		events := b.openStream(ctx, "/jobs/live?new=1&id="+mine.ID+"&id="+theirs.ID, "")
		first := waitEvent(ctx, t, events, "patch", `"job-`+mine.ID+`-status"`, "PENDING")
		if strings.Contains(first.data, theirs.ID) {
			t.Errorf("the stream patched another tenant's job: %s", first.data)
		}
		if _, err := e.jobs.Cancel(viewer.NewContext(context.Background(), e.admin), mine.ID); err != nil {
			t.Fatal(err)
		}
		waitEvent(ctx, t, events, "patch", "CANCELLED", "cancelled by "+adminEmail)
		e.submit(e.admin, "newer", "true")
		waitEvent(ctx, t, events, "stale", "1 new job")
	})
}

// A first page filtered by status counts a newer job that comes to match
// (cancelled after the page was drawn), and never another tenant's: the
// stream counts only on its tenant's queue signals.
func TestDashboardJobsListLiveStatusFilter(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		shown := e.submit(e.admin, "shown", "sleep 600")
		if _, err := e.jobs.Cancel(viewer.NewContext(context.Background(), e.admin), shown.ID); err != nil {
			t.Fatal(err)
		}
		b := e.browser()
		b.signIn(adminEmail)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		events := b.openStream(ctx, "/jobs/live?new=1&status=CANCELLED&id="+shown.ID, "")
		waitEvent(ctx, t, events, "patch", `"job-`+shown.ID+`-status"`, "CANCELLED")
		theirs := e.submit(e.other, "theirs", "sleep 600")
		if _, err := e.jobs.Cancel(viewer.NewContext(context.Background(), e.other), theirs.ID); err != nil {
			t.Fatal(err)
		}
		later := e.submit(e.admin, "later", "sleep 600")
		if _, err := e.jobs.Cancel(viewer.NewContext(context.Background(), e.admin), later.ID); err != nil {
			t.Fatal(err)
		}
		if ev := waitEvent(ctx, t, events, "stale", "new job"); !strings.Contains(ev.data, "1 new job") {
			t.Fatalf("stale notice %s, want 1 new job (another tenant's counted?)", ev.data)
		}
	})
}

// The job page follows the job: status and reason change in place, the
// cancel button goes, and the stream ends with the job. Another tenant's
// job has no stream (404).
func TestDashboardJobPageLive(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		mine := e.submit(e.admin, "watched", "sleep 600")
		theirs := e.submit(e.other, "secret", "sleep 600")
		b := e.browser()
		b.signIn(adminEmail)
		if code, _ := b.get("/jobs/" + theirs.ID + "/live"); code != http.StatusNotFound {
			t.Errorf("another tenant's job stream: %d; want 404", code)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		events := b.openStream(ctx, "/jobs/"+mine.ID+"/live?service=main", "")
		waitEvent(ctx, t, events, "patch", `"job-status"`, "PENDING", `"service-chip"`)
		if _, err := e.jobs.Cancel(viewer.NewContext(context.Background(), e.admin), mine.ID); err != nil {
			t.Fatal(err)
		}
		waitEvent(ctx, t, events, "patch", "CANCELLED", `"cancel-form"`, `"hidden":"hidden"`)
		waitEvent(ctx, t, events, "end")
	})
}

// Unknown paths and other tenants' objects get the 404 page in the frame;
// a superadmin outside every tenant asking for a tenant page is sent to
// the tenant list instead of a Forbidden page.
func TestDashboardNotFoundAndSuperadminRedirect(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		theirs := e.submit(e.other, "zanzibar-plan", "true")
		anon := e.browser()
		if code, body := anon.get("/no/such/page"); code != http.StatusNotFound || !strings.Contains(body, "Page not found") {
			t.Errorf("anonymous unknown path: %d; want the 404 page", code)
		}
		b := e.browser()
		b.signIn(memberEmail)
		for _, path := range []string{"/no/such/page", "/jobs/" + theirs.ID} {
			code, body := b.get(path)
			if code != http.StatusNotFound || !strings.Contains(body, "Page not found") || !strings.Contains(body, `href="/jobs"`) {
				t.Errorf("member GET %s: %d; want the 404 page with the navigation", path, code)
			}
			if strings.Contains(body, "zanzibar-plan") {
				t.Errorf("the 404 page of %s shows the other tenant's job name", path)
			}
		}
		sa := e.browser()
		sa.signIn(superEmail)
		res, _ := sa.do(http.MethodGet, "/jobs", nil)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/superadmin" {
			t.Fatalf("superadmin outside a tenant GET /jobs: %d to %q; want 303 to /superadmin", res.StatusCode, res.Header.Get("Location"))
		}
		if code, body := sa.get("/superadmin"); code != http.StatusOK || !strings.Contains(body, "Enter a tenant to see its /jobs page") {
			t.Errorf("the tenant list after the redirect: %d, without the notice", code)
		}
	})
}
