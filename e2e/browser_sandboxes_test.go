package e2e

import (
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
)

// The Sandboxes and Blueprints pages are in the navigation and say when
// there is nothing yet (their rows are checked in ui's tests, where the
// sandboxes and blueprints are stored directly).
func TestBrowserSandboxesAndBlueprints(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		s := startServer(t, t.TempDir(), url)
		c := s.credentials()
		tb := newTab(t, s.URL)
		tb.signIn(c.AdminEmail, c.AdminPassword)
		tb.open("/sandboxes")
		tb.waitText("nav", "Sandboxes")
		tb.waitText("nav", "Blueprints")
		tb.waitText("main", "No sandboxes yet")
		tb.open("/blueprints")
		tb.waitText("main", "No blueprints yet")
	})
}
