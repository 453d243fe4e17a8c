package jobspec

import (
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/wire"
)

func TestVenvOnlyFromBlueprints(t *testing.T) {
	t.Parallel()
	venv := &wire.Venv{Key: strings.Repeat("a", 64), Steps: []wire.BuildStep{{Kind: wire.StepPip, Packages: []string{"six"}}}}
	bp := "levers9-bp/tn_1:" + strings.Repeat("a", 64)
	job := func(sandbox bool, image string, v *wire.Venv) Job {
		return Job{Queue: "q", Sandbox: sandbox, Interactive: sandbox, Services: []Service{{Name: "s", Image: image, Command: []string{"python"}, Venv: v}}}
	}
	for _, tc := range []struct {
		name string
		j    Job
		ok   bool
	}{
		{"sandbox with venv", job(true, bp, venv), true},
		{"user job with venv", job(false, "python:3.12", venv), false},
		{"sandbox venv without blueprint image", job(true, "python:3.12", venv), false},
		{"sandbox with a bad key", job(true, bp, &wire.Venv{Key: "../x"}), false},
		{"sandbox with a RUN step", job(true, bp, &wire.Venv{Key: venv.Key, Steps: []wire.BuildStep{{Kind: wire.StepRun, Commands: []string{"true"}}}}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := Validate(tc.j)
			if (err == nil) != tc.ok {
				t.Fatalf("Validate = %v, want ok %v", err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "venv") {
				t.Fatalf("error %v does not name the venv", err)
			}
		})
	}
}
