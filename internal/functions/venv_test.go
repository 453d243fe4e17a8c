package functions_test

import (
	"context"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/blueprint"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/internal/blueprints"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/functions"
	"github.com/levers9/levers9/internal/wire"
)

// rowBlueprints reads blueprints from the database (any state).
type rowBlueprints struct{ db *ent.Client }

func (b rowBlueprints) Ready(_ context.Context, _, id string) (*ent.Blueprint, error) {
	return b.db.Blueprint.Get(fixture.Sys(), id)
}

// A function container of a blueprint of pip packages carries its
// virtual environment (a node without containers may run it); one of a
// blueprint with a RUN step does not.
func TestContainerVenv(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		w.fn.Blueprints = rowBlueprints{w.tn.DB.Ent}
		record := func(steps ...wire.BuildStep) *ent.Blueprint {
			steps, err := blueprints.Keys(steps)
			if err != nil {
				t.Fatal(err)
			}
			key := steps[len(steps)-1].Key
			bp, err := w.tn.DB.Ent.Blueprint.Create().SetTenantID(w.tn.ID).SetKey(key).SetFirstKey(steps[0].Key).SetSteps(steps).
				SetImage(blueprints.Repository(w.tn.ID) + ":" + key).SetOwnerID(w.tn.Admin.ID).SetState(blueprint.StateREADY).Save(fixture.Sys())
			if err != nil {
				t.Fatal(err)
			}
			return bp
		}
		base := wire.BuildStep{Kind: wire.StepRegistry, Ref: "python:3.12-slim"}
		pips := record(base, wire.BuildStep{Kind: wire.StepPip, Packages: []string{"six==1.16.0"}})
		runs := record(base, wire.BuildStep{Kind: wire.StepRun, Commands: []string{"true"}})
		a := w.deployVersion(t, ctx, "venvs", codeHash,
			functions.FunctionSpec{Name: "pips", Kind: function.KindBOX, Ports: []int{8000}, Blueprint: pips.ID},
			functions.FunctionSpec{Name: "runs", Kind: function.KindBOX, Ports: []int{8000}, Blueprint: runs.ID})
		for _, tc := range []struct {
			name string
			want *ent.Blueprint
		}{{"pips", pips}, {"runs", nil}} {
			f := fnNamed(t, a.Edges.Functions, tc.name)
			_, _ = w.fn.BoxContainer(ctx, f, 10*time.Millisecond) // starts one; none gets ready
			svc := w.jobOf(t, f.ID).Spec.Services[0]
			if svc.Image != f.Image {
				t.Fatalf("%s: image %q, want %q", tc.name, svc.Image, f.Image)
			}
			switch {
			case tc.want == nil && svc.Venv != nil:
				t.Errorf("%s: venv %+v, want none", tc.name, svc.Venv)
			case tc.want != nil && (svc.Venv == nil || svc.Venv.Key != tc.want.Key || len(svc.Venv.Steps) != 1):
				t.Errorf("%s: venv %+v, want key %s with its PIP step", tc.name, svc.Venv, tc.want.Key)
			}
		}
	})
}
