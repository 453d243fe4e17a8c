package sandboxes_test

import (
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/blueprint"
	"github.com/levers9/levers9/internal/blueprints"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/sandboxes"
	"github.com/levers9/levers9/internal/wire"
)

// stepsBlueprint records a READY blueprint of tn with steps (keyed).
func (w *world) stepsBlueprint(t *testing.T, steps ...wire.BuildStep) *ent.Blueprint {
	t.Helper()
	steps, err := blueprints.Keys(steps)
	if err != nil {
		t.Fatal(err)
	}
	key := steps[len(steps)-1].Key
	bp, err := w.db.Blueprint.Create().SetTenantID(w.tn.ID).SetKey(key).SetFirstKey(steps[0].Key).SetSteps(steps).
		SetImage(blueprints.Repository(w.tn.ID) + ":" + key).SetOwnerID(w.tn.Admin.ID).SetState(blueprint.StateREADY).Save(fixture.Sys())
	if err != nil {
		t.Fatal(err)
	}
	return bp
}

// A sandbox of a blueprint of pip packages carries its virtual
// environment (so a node without containers may run it); one of a
// blueprint with other steps, or of an image, does not.
func TestCreateVenv(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		base := wire.BuildStep{Kind: wire.StepRegistry, Ref: "python:3.12-slim"}
		pip := wire.BuildStep{Kind: wire.StepPip, Packages: []string{"six==1.16.0"}}
		env := wire.BuildStep{Kind: wire.StepEnv, Env: []wire.EnvVar{{Name: "MODE", Value: "x"}}}
		run := wire.BuildStep{Kind: wire.StepRun, Commands: []string{"true"}}
		pips := w.stepsBlueprint(t, base, pip, env)
		runs := w.stepsBlueprint(t, base, pip, run)
		for _, tc := range []struct {
			name string
			in   sandboxes.Input
			venv *ent.Blueprint
		}{
			{"pip and env", sandboxes.Input{Blueprint: pips.ID}, pips},
			{"a RUN step", sandboxes.Input{Blueprint: runs.ID}, nil},
			{"an image", sandboxes.Input{Image: "python:3.12-slim"}, nil},
		} {
			j, err := w.sb.Create(w.tn.As(w.alice), tc.in)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			got := j.Spec.Services[0].Venv
			if tc.venv == nil {
				if got != nil {
					t.Errorf("%s: venv %+v, want none", tc.name, got)
				}
				continue
			}
			if got == nil || got.Key != tc.venv.Key || len(got.Steps) != 2 || got.Steps[0].Kind != wire.StepPip || got.Steps[1].Kind != wire.StepEnv {
				t.Errorf("%s: venv %+v, want the blueprint's key and its PIP and ENV steps", tc.name, got)
			}
			stored, err := w.db.Job.Get(fixture.Sys(), j.ID)
			if err != nil || stored.Spec.Services[0].Venv == nil {
				t.Errorf("%s: the stored spec has no venv (%v)", tc.name, err)
			}
		}
	})
}
