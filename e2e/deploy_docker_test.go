package e2e

import (
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/dockertest"
)

// Deployments in real containers: the built-in node on Docker runs the
// apps' functions in the Debian python3 image (dockertest.Python). Deploy
// v1, call it, deploy v2, both answer, a rollback, stop v1; and a
// WebSocket echo through /endpoint/NAME to a REALTIME function's
// container (the runner's own WebSocket server, proxied by the relay).
func TestDeployDocker(t *testing.T) {
	t.Parallel()
	image := dockertest.Python(t)
	s, c := functionsServer(t, dbtest.SQLiteURL(t), "docker")
	d := newDeployer(t, s, c.Token, "E2E_IMAGE="+image, "E2E_CPU=0.25")
	t.Run("versions", func(t *testing.T) {
		t.Parallel()
		checkVersions(t, d, true)
	})
	t.Run("realtime", func(t *testing.T) {
		t.Parallel()
		checkRealtime(t, d)
	})
}
