package blueprints_test

import (
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/blueprints"
	"github.com/levers9/levers9/internal/wire"
)

func TestSummary(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		step wire.BuildStep
		want string
	}{
		{wire.BuildStep{Kind: wire.StepRegistry, Ref: "python:3.12-slim"}, "FROM python:3.12-slim"},
		{wire.BuildStep{Kind: wire.StepDebootstrap, Suite: "bookworm", Packages: []string{"python3"}}, "DEBOOTSTRAP bookworm +python3"},
		{wire.BuildStep{Kind: wire.StepApt, Packages: []string{"ffmpeg"}}, "APT ffmpeg"},
		{wire.BuildStep{Kind: wire.StepPip, Packages: []string{"torch==2.5.1", "pillow"}}, "PIP torch==2.5.1 pillow"},
		{wire.BuildStep{Kind: wire.StepPip, Requirements: "numpy\n"}, "PIP -r requirements.txt"},
		{wire.BuildStep{Kind: wire.StepRun, Commands: []string{"python -c 'import torch'"}}, "RUN python -c 'import torch'"},
		{wire.BuildStep{Kind: wire.StepRun, Commands: []string{"a\nb", "c"}}, "RUN a b && c"},
		{wire.BuildStep{Kind: wire.StepCopy, Code: strings.Repeat("a", 64), Path: "/weights"}, "COPY → /weights"},
		{wire.BuildStep{Kind: wire.StepEnv, Env: []wire.EnvVar{{Name: "A", Value: "secret"}, {Name: "B"}}}, "ENV A B"},
		{wire.BuildStep{Kind: wire.StepWorkdir, Path: "/app"}, "WORKDIR /app"},
	} {
		if got := blueprints.Summary(c.step); got != c.want {
			t.Errorf("Summary(%+v) = %q, want %q", c.step, got, c.want)
		}
	}
	long := blueprints.Summary(wire.BuildStep{Kind: wire.StepRun, Commands: []string{strings.Repeat("x", 1000)}})
	if n := len([]rune(long)); n != 200 || !strings.HasSuffix(long, "…") {
		t.Errorf("a long RUN's summary has %d runes (%q…), want 200 ending in …", n, long[:20])
	}
}
