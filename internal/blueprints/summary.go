package blueprints

import (
	"strings"

	"github.com/levers9/levers9/internal/wire"
)

// summaryMax bounds a step's summary: a long RUN or requirements file
// is for the build log, not a list.
const summaryMax = 200

// Summary is one line saying what step s does ("PIP torch pillow",
// "COPY → /weights"). ENV names its variables, never their values.
func Summary(s wire.BuildStep) string {
	var line string
	switch s.Kind {
	case wire.StepRegistry:
		line = "FROM " + s.Ref
	case wire.StepDebootstrap:
		line = "DEBOOTSTRAP " + s.Suite
		if len(s.Packages) > 0 {
			line += " +" + strings.Join(s.Packages, ",")
		}
	case wire.StepApt:
		line = "APT " + strings.Join(s.Packages, " ")
	case wire.StepPip:
		line = strings.TrimSpace("PIP " + strings.Join(s.Packages, " "))
		if s.Requirements != "" {
			line += " -r requirements.txt"
		}
	case wire.StepRun:
		line = "RUN " + strings.Join(s.Commands, " && ")
	case wire.StepCopy:
		line = "COPY → " + s.Path
	case wire.StepEnv:
		names := make([]string, len(s.Env))
		for i, e := range s.Env {
			names[i] = e.Name
		}
		line = "ENV " + strings.Join(names, " ")
	case wire.StepWorkdir:
		line = "WORKDIR " + s.Path
	default:
		line = s.Kind
	}
	line = strings.Join(strings.Fields(line), " ")
	if r := []rune(line); len(r) > summaryMax {
		line = string(r[:summaryMax-1]) + "…"
	}
	return line
}
