package graph

import (
	"strings"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/graph/model"
	"github.com/levers9/levers9/internal/blueprints"
	"github.com/levers9/levers9/internal/wire"
)

// buildInput is a blueprint as the domain takes it; the domain checks
// the steps (and names the bad field).
func buildInput(in model.BuildBlueprintInput) blueprints.BuildInput {
	steps := make([]wire.BuildStep, len(in.Steps))
	for i, s := range in.Steps {
		steps[i] = buildStep(s)
	}
	return blueprints.BuildInput{
		Steps: steps, Queue: deref(in.Queue), Project: deref(in.Project),
		CPU: deref(in.CPU), MemoryMiB: int64(deref(in.MemoryMiB)),
	}
}

func buildStep(s *model.BlueprintStepInput) wire.BuildStep {
	out := wire.BuildStep{
		Kind: string(s.Kind), Ref: deref(s.Ref), Suite: deref(s.Suite), Mirror: deref(s.Mirror),
		Packages: s.Packages, Requirements: deref(s.Requirements), Commands: s.Commands,
		Code: deref(s.Code), Path: deref(s.Path),
	}
	for _, e := range s.Env {
		if e != nil {
			out.Env = append(out.Env, wire.EnvVar{Name: e.Name, Value: e.Value})
		}
	}
	return out
}

// blueprintSteps are b's steps as people read them.
func blueprintSteps(b *ent.Blueprint) []*model.BlueprintStep {
	out := make([]*model.BlueprintStep, len(b.Steps))
	for i, s := range b.Steps {
		out[i] = &model.BlueprintStep{Key: s.Key, Kind: model.BlueprintStepKind(s.Kind), Summary: StepSummary(s)}
	}
	return out
}

// summaryMax bounds a step's summary: a long RUN or requirements file
// is for the build log, not a list.
const summaryMax = 200

// StepSummary is one line saying what step s does ("PIP torch pillow",
// "COPY → /weights"). ENV names its variables, never their values.
func StepSummary(s wire.BuildStep) string {
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
