package docker

import (
	"os"
	"strings"
	"testing"
)

// TestHostProcessOnlyInTheContainer: a PID that names a process outside
// the container (as for an agent in another PID namespace) is refused.
func TestHostProcessOnlyInTheContainer(t *testing.T) {
	t.Parallel()
	p, err := openHostProcess(os.Getpid(), strings.Repeat("ab", 32))
	if err == nil {
		p.release()
		t.Fatal("opened the test's own process as the command of a container")
	}
	if !strings.Contains(err.Error(), "not the command in container abababababab") {
		t.Errorf("error %q", err)
	}
}
