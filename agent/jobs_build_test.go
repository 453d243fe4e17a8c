package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/wire"
)

// plainRuntime runs no containers and builds nothing.
type plainRuntime struct{}

func (plainRuntime) Start(context.Context, runtime.JobSpec) (runtime.Job, error) {
	return nil, errors.New("not in this test")
}
func (plainRuntime) Name() string { return "process" }

// buildRuntime records the build it was given.
type buildRuntime struct {
	plainRuntime
	got runtime.BuildSpec
}

func (b *buildRuntime) Build(_ context.Context, spec runtime.BuildSpec) (runtime.Job, error) {
	b.got = spec
	return nil, nil
}

// A Start with a Build goes to the runtime's Builder with the build
// service's resources and the agent's code cache and upload; a runtime
// without builds refuses it clearly.
func TestStartBuildDispatch(t *testing.T) {
	t.Parallel()
	m := wire.Start{
		JobID: "job-b", Attempt: 2, Tenant: "tn", TimeoutSeconds: 60,
		Services: []wire.ServiceStart{{Name: "build", Image: "levers9-bp/tn:k", Command: []string{"levers9-build"}, CPU: 2, MemoryMiB: 512}},
		Build:    &wire.Build{Blueprint: "bp_1", Repository: "levers9-bp/tn", Steps: []wire.BuildStep{{Kind: wire.StepRegistry, Ref: "busybox"}}},
	}
	a := testAgent(t, "http://127.0.0.1:1")
	a.cfg.Runtime = plainRuntime{}
	_, err := a.startJob(context.Background(), m, runtime.SpecFromStart(m))
	if err == nil || !strings.Contains(err.Error(), "cannot build blueprints") {
		t.Errorf("a runtime without builds: %v", err)
	}

	br := &buildRuntime{}
	a.cfg.Runtime = br
	if _, err := a.startJob(context.Background(), m, runtime.SpecFromStart(m)); err != nil {
		t.Fatal(err)
	}
	g := br.got
	if g.ID != "job-b" || g.Attempt != 2 || g.Tenant != "tn" || g.Timeout.Seconds() != 60 ||
		g.Service.Name != "build" || g.Service.CPU != 2 || g.Service.MemoryMiB != 512 ||
		g.Build.Blueprint != "bp_1" || g.Code == nil || g.Upload == nil {
		t.Errorf("build spec %+v", g)
	}
}
