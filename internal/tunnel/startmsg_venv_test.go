package tunnel

import (
	"reflect"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/wire"
)

// A service's virtual environment (from its spec) reaches the agent with
// that service only.
func TestStartMessageVenv(t *testing.T) {
	t.Parallel()
	venv := &wire.Venv{Key: strings.Repeat("a", 64), Steps: []wire.BuildStep{{Kind: wire.StepPip, Packages: []string{"six"}}}}
	j := &ent.Job{ID: "job_1", Spec: jobspec.Job{Sandbox: true, Services: []jobspec.Service{{Name: "sandbox", Venv: venv}, {Name: "other"}}}}
	j.Edges.Services = []*ent.Service{{Name: "other", Command: []string{"true"}}, {Name: "sandbox", Image: "levers9-bp/t:" + venv.Key, Command: []string{"sh"}}}
	got := startMessage(j)
	if len(got.Services) != 2 || !reflect.DeepEqual(got.Services[0].Venv, venv) || got.Services[1].Venv != nil {
		t.Fatalf("services %+v", got.Services)
	}
	if err := got.Validate(); err != nil {
		t.Fatalf("the start is invalid: %v", err)
	}
}
