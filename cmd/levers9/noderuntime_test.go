package main

import (
	"strings"
	"testing"
)

// The agent and the built-in node check their runtime choice with one
// rule, each naming its own flags.
func TestRuntimeConfigCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  runtimeConfig
		says string // "" for accepted
	}{
		{runtimeConfig{Runtime: "auto", DefaultImage: defaultImage}, ""},
		{runtimeConfig{Runtime: "docker", DefaultImage: "alpine"}, ""},
		{runtimeConfig{Runtime: "process"}, ""},
		{runtimeConfig{Runtime: "podman", DefaultImage: "alpine"}, `runtime "podman": must be auto, docker or process`},
		{runtimeConfig{Runtime: "", DefaultImage: "alpine"}, `runtime "": must be auto, docker or process`},
		{runtimeConfig{Runtime: "docker", DefaultImage: " "}, "default-image must name an image"},
		{runtimeConfig{Runtime: "auto"}, "default-image must name an image"},
	} {
		for _, flags := range []runtimeFlags{agentRuntimeFlags, localNodeRuntimeFlags} {
			err := tc.cfg.check(flags)
			switch {
			case tc.says == "" && err != nil:
				t.Errorf("%+v: %v", tc.cfg, err)
			case tc.says != "" && (err == nil || !strings.HasPrefix(err.Error(), string(flags)+tc.says)):
				t.Errorf("%+v with %s flags: %v; want %q", tc.cfg, flags, err, string(flags)+tc.says)
			}
		}
	}
}
