package blueprints_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/blueprints"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/wire"
)

const zipHash = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func sampleSteps() []wire.BuildStep {
	return []wire.BuildStep{
		{Kind: wire.StepRegistry, Ref: "python:3.12-slim"},
		{Kind: wire.StepApt, Packages: []string{"ffmpeg"}},
		{Kind: wire.StepPip, Packages: []string{"torch==2.5.1", "pillow"}},
		{Kind: wire.StepRun, Commands: []string{"python -c 'import torch'"}},
		{Kind: wire.StepCopy, Code: zipHash, Path: "/weights"},
		{Kind: wire.StepEnv, Env: []wire.EnvVar{{Name: "A", Value: "1"}}},
		{Kind: wire.StepWorkdir, Path: "/work"},
	}
}

// The key formula of the contract, computed independently.
func TestKeysFormula(t *testing.T) {
	t.Parallel()
	steps := sampleSteps()
	got, err := blueprints.Keys(steps)
	if err != nil {
		t.Fatal(err)
	}
	prev := ""
	for i, st := range steps {
		b, _ := json.Marshal(st)
		var text string
		if i == 0 {
			text = "levers9-blueprint-v1\n" + string(b)
		} else {
			text = prev + "\n" + string(b)
		}
		sum := sha256.Sum256([]byte(text))
		prev = hex.EncodeToString(sum[:])
		if got[i].Key != prev {
			t.Errorf("step %d: key %s, want %s", i, got[i].Key, prev)
		}
	}
	if steps[0].Key != "" {
		t.Error("Keys changed its input")
	}
	// A key given by the caller is ignored.
	steps[0].Key = "forged"
	again, err := blueprints.Keys(steps)
	if err != nil || again[0].Key != got[0].Key {
		t.Errorf("a given key changed the result: %v", err)
	}
}

func TestKeysRefuses(t *testing.T) {
	t.Parallel()
	base := wire.BuildStep{Kind: wire.StepRegistry, Ref: "python:3.12-slim"}
	deb := wire.BuildStep{Kind: wire.StepDebootstrap, Suite: "bookworm", Mirror: "http://deb.debian.org/debian", Packages: []string{"python3"}}
	long := strings.Repeat("x", 300)
	for _, tc := range []struct {
		name  string
		steps []wire.BuildStep
		field string // "" accepted
	}{
		{"registry base", []wire.BuildStep{base}, ""},
		{"debootstrap base", []wire.BuildStep{deb}, ""},
		{"debootstrap without mirror", []wire.BuildStep{{Kind: wire.StepDebootstrap, Suite: "bookworm"}}, ""},
		{"no steps", nil, "steps"},
		{"too many steps", append([]wire.BuildStep{base}, make([]wire.BuildStep, 64)...), "steps"},
		{"first not a base", []wire.BuildStep{{Kind: wire.StepApt, Packages: []string{"x"}}}, "steps[0].kind"},
		{"second base", []wire.BuildStep{base, base}, "steps[1].kind"},
		{"unknown kind", []wire.BuildStep{base, {Kind: "FROB"}}, "steps[1].kind"},
		{"no ref", []wire.BuildStep{{Kind: wire.StepRegistry}}, "steps[0].ref"},
		{"bad ref", []wire.BuildStep{{Kind: wire.StepRegistry, Ref: "Python 3"}}, "steps[0].ref"},
		{"reserved ref", []wire.BuildStep{{Kind: wire.StepRegistry, Ref: "levers9-bp/tn_x:abc"}}, "steps[0].ref"},
		{"reserved ref with host", []wire.BuildStep{{Kind: wire.StepRegistry, Ref: "docker.io/Levers9-BP/tn_x:abc"}}, "steps[0].ref"},
		{"bad suite", []wire.BuildStep{{Kind: wire.StepDebootstrap, Suite: "Book worm"}}, "steps[0].suite"},
		{"bad mirror", []wire.BuildStep{{Kind: wire.StepDebootstrap, Suite: "bookworm", Mirror: "ftp://x"}}, "steps[0].mirror"},
		{"apt without packages", []wire.BuildStep{base, {Kind: wire.StepApt}}, "steps[1].packages"},
		{"apt package with newline", []wire.BuildStep{base, {Kind: wire.StepApt, Packages: []string{"a\nb"}}}, "steps[1].packages[0]"},
		{"apt package with NUL", []wire.BuildStep{base, {Kind: wire.StepApt, Packages: []string{"a\x00"}}}, "steps[1].packages[0]"},
		{"apt option", []wire.BuildStep{base, {Kind: wire.StepApt, Packages: []string{"--allow-unauthenticated"}}}, "steps[1].packages[0]"},
		{"long package", []wire.BuildStep{base, {Kind: wire.StepApt, Packages: []string{long}}}, "steps[1].packages[0]"},
		{"pip without anything", []wire.BuildStep{base, {Kind: wire.StepPip}}, "steps[1].packages"},
		{"pip requirements only", []wire.BuildStep{base, {Kind: wire.StepPip, Requirements: "torch\n"}}, ""},
		{"run without commands", []wire.BuildStep{base, {Kind: wire.StepRun}}, "steps[1].commands"},
		{"run script over one argument", []wire.BuildStep{base, {Kind: wire.StepRun, Commands: slices.Repeat([]string{strings.Repeat("x", blueprints.MaxCommandBytes)}, 7)}}, "steps[1].commands"},
		{"requirements over one argument", []wire.BuildStep{base, {Kind: wire.StepPip, Requirements: strings.Repeat("a\n", blueprints.MaxRequirementsBytes)}}, "steps[1].requirements"},
		{"run blank command", []wire.BuildStep{base, {Kind: wire.StepRun, Commands: []string{" "}}}, "steps[1].commands[0]"},
		{"copy bad code", []wire.BuildStep{base, {Kind: wire.StepCopy, Code: "abc", Path: "/x"}}, "steps[1].code"},
		{"copy relative path", []wire.BuildStep{base, {Kind: wire.StepCopy, Code: zipHash, Path: "x"}}, "steps[1].path"},
		{"copy unclean path", []wire.BuildStep{base, {Kind: wire.StepCopy, Code: zipHash, Path: "/x/../y"}}, "steps[1].path"},
		{"env empty", []wire.BuildStep{base, {Kind: wire.StepEnv}}, "steps[1].env"},
		{"env bad name", []wire.BuildStep{base, {Kind: wire.StepEnv, Env: []wire.EnvVar{{Name: "1A"}}}}, "steps[1].env[0].name"},
		{"env duplicate", []wire.BuildStep{base, {Kind: wire.StepEnv, Env: []wire.EnvVar{{Name: "A"}, {Name: "A"}}}}, "steps[1].env[1].name"},
		{"env newline", []wire.BuildStep{base, {Kind: wire.StepEnv, Env: []wire.EnvVar{{Name: "A", Value: "a\nRUN x"}}}}, "steps[1].env[0].value"},
		{"workdir relative", []wire.BuildStep{base, {Kind: wire.StepWorkdir, Path: "w"}}, "steps[1].path"},
		{"field of another kind", []wire.BuildStep{base, {Kind: wire.StepRun, Commands: []string{"x"}, Path: "/x"}}, "steps[1].path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := blueprints.Keys(tc.steps)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			fs := fault.Classify(err)
			if len(fs) != 1 || fs[0].Code != fault.BadUserInput || fs[0].Field != tc.field {
				t.Fatalf("got %v, want BAD_USER_INPUT on %s", err, tc.field)
			}
		})
	}
}

func TestReserved(t *testing.T) {
	t.Parallel()
	for image, want := range map[string]bool{
		"levers9-bp/tn_1:abc":           true,
		"LEVERS9-BP/tn_1:abc":           true,
		"docker.io/levers9-bp/tn_1:abc": true,
		"localhost:5000/levers9-bp/x":   true,
		"python:3.12-slim":              false,
		"levers9-bpx/y":                 false,
		"myorg/not-levers9-bp":          false,
		"":                              false,
	} {
		if got := blueprints.Reserved(image); got != want {
			t.Errorf("Reserved(%q) = %v, want %v", image, got, want)
		}
	}
}

// FuzzKeys: Keys never panics, is deterministic, and changing one step
// changes the keys from that step on only.
func FuzzKeys(f *testing.F) {
	f.Add("python:3.12-slim", "ffmpeg", "pip", "echo hi", "/w", uint8(1), "curl")
	f.Add("debian:bookworm", "", "", "", "", uint8(0), "x")
	f.Fuzz(func(t *testing.T, ref, apt, pip, run, path string, which uint8, changed string) {
		steps := []wire.BuildStep{
			{Kind: wire.StepRegistry, Ref: ref},
			{Kind: wire.StepApt, Packages: []string{apt}},
			{Kind: wire.StepPip, Packages: []string{pip}},
			{Kind: wire.StepRun, Commands: []string{run}},
			{Kind: wire.StepWorkdir, Path: path},
		}
		a, errA := blueprints.Keys(steps)
		b, errB := blueprints.Keys(steps)
		if (errA == nil) != (errB == nil) {
			t.Fatal("not deterministic")
		}
		if errA != nil {
			return
		}
		for i := range a {
			if a[i].Key != b[i].Key || len(a[i].Key) != 64 {
				t.Fatalf("step %d: keys %q and %q", i, a[i].Key, b[i].Key)
			}
		}
		i := int(which) % len(steps)
		mod := append([]wire.BuildStep(nil), steps...)
		switch i {
		case 0:
			mod[0].Ref = changed
		case 1:
			mod[1].Packages = []string{changed}
		case 2:
			mod[2].Packages = []string{changed}
		case 3:
			mod[3].Commands = []string{changed}
		case 4:
			mod[4].Path = changed
		}
		c, err := blueprints.Keys(mod)
		if err != nil {
			return
		}
		same := string(mustJSON(t, steps[i])) == string(mustJSON(t, mod[i]))
		for k := range c {
			switch {
			case k < i && c[k].Key != a[k].Key:
				t.Fatalf("changing step %d changed the key of step %d", i, k)
			case k >= i && same && c[k].Key != a[k].Key:
				t.Fatalf("an unchanged step %d changed key %d", i, k)
			case k >= i && !same && c[k].Key == a[k].Key:
				t.Fatalf("changing step %d left the key of step %d", i, k)
			}
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
