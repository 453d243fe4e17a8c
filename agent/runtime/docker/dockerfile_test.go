package docker

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/wire"
)

// A step's fields never add a Dockerfile line: hostile commands, paths and
// values stay inside the one instruction (RUN and COPY as JSON, ENV and
// WORKDIR escaped or refused).
func TestStepInstructionOneLine(t *testing.T) {
	t.Parallel()
	evil := "x\nRUN touch /pwned\n\\"
	steps := []wire.BuildStep{
		{Kind: wire.StepRun, Commands: []string{evil, `"]` + "\nONBUILD RUN id", "echo \u2028 $HOME \\"}},
		{Kind: wire.StepApt, Packages: []string{evil, "'; id; '"}},
		{Kind: wire.StepPip, Packages: []string{evil}, Requirements: evil + "\n'%s'"},
		{Kind: wire.StepCopy, Path: "/app\nARG X=1\n", Code: strings.Repeat("a", 64)},
		{Kind: wire.StepEnv, Env: []wire.EnvVar{{Name: "A", Value: `"\ $X`}}},
		{Kind: wire.StepWorkdir, Path: `/a\$X`},
	}
	for _, s := range steps {
		got, err := stepInstruction(s)
		if err != nil {
			t.Errorf("%s: %v", s.Kind, err)
			continue
		}
		if strings.ContainsAny(got, "\r\n") {
			t.Errorf("%s: %q spans lines", s.Kind, got)
		}
		if s.Kind == wire.StepRun {
			var words []string
			if err := json.Unmarshal([]byte(strings.TrimPrefix(got, "RUN ")), &words); err != nil || len(words) != 3 || words[2] != strings.Join(s.Commands, " && ") {
				t.Errorf("RUN %q: %v %q", got, err, words)
			}
		}
	}
	refused := []wire.BuildStep{
		{Kind: wire.StepEnv, Env: []wire.EnvVar{{Name: "A\nRUN id", Value: "1"}}},
		{Kind: wire.StepEnv, Env: []wire.EnvVar{{Name: "A", Value: "1\nRUN id"}}},
		{Kind: wire.StepWorkdir, Path: "/a\nRUN id"},
		{Kind: wire.StepWorkdir, Path: "rel"},
		{Kind: wire.StepRegistry, Ref: "busybox"},
	}
	for _, s := range refused {
		if got, err := stepInstruction(s); err == nil {
			t.Errorf("%s %+v: taken as %q", s.Kind, s, got)
		}
	}
}

// A build's repository starts each step's Dockerfile: only a plain
// blueprint repository is taken.
func TestCheckBuildRepository(t *testing.T) {
	t.Parallel()
	steps := []wire.BuildStep{{Kind: wire.StepRegistry, Ref: "busybox", Key: strings.Repeat("a", 64)}}
	for repo, ok := range map[string]bool{
		"levers9-bp/tn_01jabc":             true,
		"levers9-bp/tn_01jabc\nRUN id":     false,
		"levers9-bp/tn_01jabc AS x":        false,
		"levers9-bp/../x":                  false,
		"busybox":                          false,
		"docker.io/levers9-bp/tn_01jabc":   false,
		"levers9-bp/tn_01jabc:tag@sha256:": false,
	} {
		spec := runtime.BuildSpec{ID: "j", Build: wire.Build{Repository: repo, Steps: steps},
			Upload: func(_ context.Context, _ string, _ io.Reader, _ int) error { return nil }}
		if err := checkBuild(spec); (err == nil) != ok {
			t.Errorf("%q: %v", repo, err)
		}
	}
}
