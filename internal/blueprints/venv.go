package blueprints

import (
	"slices"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/wire"
)

// Venv is bp as the process runtime runs it, or nil when it cannot: a
// blueprint whose first step is its base (REGISTRY or DEBOOTSTRAP) and
// every later step PIP or ENV. The process runtime has no images: it
// ignores the base and makes a virtual environment with the node's own
// python3, cached per blueprint key, so a blueprint of pip packages can
// also run on nodes without containers. Anything else (APT, RUN, COPY,
// WORKDIR) needs the image, so a container node.
func Venv(bp *ent.Blueprint) *wire.Venv {
	if bp == nil || bp.Key == "" {
		return nil
	}
	return VenvOf(bp.Key, bp.Steps)
}

// VenvOf is Venv for a blueprint's key and steps.
func VenvOf(key string, steps []wire.BuildStep) *wire.Venv {
	if len(steps) == 0 {
		return nil
	}
	switch steps[0].Kind {
	case wire.StepRegistry, wire.StepDebootstrap:
	default:
		return nil
	}
	v := &wire.Venv{Key: key, Steps: []wire.BuildStep{}}
	for _, st := range steps[1:] {
		if st.Kind != wire.StepPip && st.Kind != wire.StepEnv {
			return nil
		}
		st.Packages = slices.Clone(st.Packages)
		st.Env = slices.Clone(st.Env)
		v.Steps = append(v.Steps, st)
	}
	if wire.CheckVenv(v) != nil {
		return nil
	}
	return v
}
