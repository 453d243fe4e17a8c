package graph

import (
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
		out[i] = &model.BlueprintStep{Key: s.Key, Kind: model.BlueprintStepKind(s.Kind), Summary: blueprints.Summary(s)}
	}
	return out
}
