package blueprints

import (
	"strings"
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/wire"
)

func TestVenvCapability(t *testing.T) {
	t.Parallel()
	reg := wire.BuildStep{Kind: wire.StepRegistry, Ref: "python:3.12-slim"}
	deb := wire.BuildStep{Kind: wire.StepDebootstrap, Suite: "bookworm", Packages: []string{"python3"}}
	pip := wire.BuildStep{Kind: wire.StepPip, Packages: []string{"requests==2.32.3"}}
	req := wire.BuildStep{Kind: wire.StepPip, Requirements: "six\n"}
	env := wire.BuildStep{Kind: wire.StepEnv, Env: []wire.EnvVar{{Name: "MODE", Value: "fast"}}}
	other := func(kind string) wire.BuildStep {
		return wire.BuildStep{Kind: kind, Packages: []string{"x"}, Commands: []string{"true"}, Path: "/w", Code: strings.Repeat("a", 64)}
	}
	for _, tc := range []struct {
		name  string
		steps []wire.BuildStep
		want  bool
	}{
		{"registry only", []wire.BuildStep{reg}, true},
		{"debootstrap only", []wire.BuildStep{deb}, true},
		{"registry pip env", []wire.BuildStep{reg, pip, env, req}, true},
		{"debootstrap pip", []wire.BuildStep{deb, pip}, true},
		{"no steps", nil, false},
		{"pip first", []wire.BuildStep{pip}, false},
		{"env first", []wire.BuildStep{env, pip}, false},
		{"apt", []wire.BuildStep{reg, other(wire.StepApt), pip}, false},
		{"run", []wire.BuildStep{reg, pip, other(wire.StepRun)}, false},
		{"copy", []wire.BuildStep{reg, other(wire.StepCopy)}, false},
		{"workdir", []wire.BuildStep{reg, other(wire.StepWorkdir)}, false},
		{"second base", []wire.BuildStep{reg, deb}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			steps, err := Keys(tc.steps)
			if err != nil {
				steps = tc.steps // invalid sequences are still answered
			}
			key := strings.Repeat("b", 64)
			if len(steps) > 0 && steps[len(steps)-1].Key != "" {
				key = steps[len(steps)-1].Key
			}
			v := Venv(&ent.Blueprint{Key: key, Steps: steps})
			if (v != nil) != tc.want {
				t.Fatalf("Venv = %+v, want capable %v", v, tc.want)
			}
			if v == nil {
				return
			}
			if v.Key != key || len(v.Steps) != len(steps)-1 {
				t.Fatalf("Venv = %+v: want key %s and the %d steps after the base", v, key, len(steps)-1)
			}
			for _, st := range v.Steps {
				if st.Kind != wire.StepPip && st.Kind != wire.StepEnv {
					t.Fatalf("step %s in a venv", st.Kind)
				}
			}
		})
	}
	if Venv(nil) != nil || Venv(&ent.Blueprint{Steps: []wire.BuildStep{reg}}) != nil {
		t.Fatal("a blueprint without a key has no venv")
	}
}
