package blueprints

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/wire"
)

// RepositoryPrefix starts the image repository of every tenant's
// blueprints; no user's job spec may name an image under it.
const RepositoryPrefix = jobspec.ReservedPrefix

// Repository is the image repository of tenantID's blueprints.
func Repository(tenantID string) string { return RepositoryPrefix + tenantID }

// Reserved reports whether image is a blueprint's image, which only the
// blueprints layer may put into a job (so a tenant cannot run another's).
// The one rule is jobspec's, which refuses such images in users' jobs.
func Reserved(image string) bool { return jobspec.ReservedImage(image) }

// ReservedError is the refusal of a reserved image in field.
func ReservedError(field string) error { return fault.Invalid(field, "%s", jobspec.ReservedMessage) }

// Bounds on a blueprint's steps, so that a spec stays a small value.
const (
	MaxSteps        = 64
	MaxPackages     = 256 // per step
	MaxPackageBytes = 256
	MaxCommands     = 64 // per step
	MaxCommandBytes = 16 << 10
	// A step's script (RUN's commands joined, PIP's requirements) goes to
	// the build as one argument, which Linux caps at 128 KiB: refused
	// here, clearly, rather than by the daemon mid-build.
	MaxRequirementsBytes = 96 << 10
	MaxScriptBytes       = 96 << 10
	MaxRefBytes          = 255
	MaxPathBytes         = 1024
	MaxStepEnv           = 64
)

// keyDomain starts the first step's hashed text, so that a key is never
// confused with another hash of the same JSON.
const keyDomain = "levers9-blueprint-v1\n"

var (
	suiteRE = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)
	hexRE   = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// Keys validates steps and returns them with each Key set: the hex
// SHA-256 of the previous step's key and the step's canonical JSON.
// A bad step is a fault.Invalid naming it ("steps[2].packages").
func Keys(steps []wire.BuildStep) ([]wire.BuildStep, error) {
	switch {
	case len(steps) == 0:
		return nil, fault.Invalid("steps", "a blueprint needs at least one step: a base (REGISTRY or DEBOOTSTRAP)")
	case len(steps) > MaxSteps:
		return nil, fault.Invalid("steps", "at most %d steps", MaxSteps)
	}
	out := make([]wire.BuildStep, len(steps))
	prev := ""
	for i, st := range steps {
		st.Key = ""
		if err := checkStep(i, st); err != nil {
			return nil, err
		}
		b, err := json.Marshal(st)
		if err != nil {
			return nil, fmt.Errorf("encoding step %d: %w", i, err)
		}
		var sum [32]byte
		if i == 0 {
			sum = sha256.Sum256(append([]byte(keyDomain), b...))
		} else {
			sum = sha256.Sum256(append([]byte(prev+"\n"), b...))
		}
		st.Key = hex.EncodeToString(sum[:])
		prev = st.Key
		out[i] = cloneStep(st)
	}
	return out, nil
}

// cloneStep copies st's slices, so that the caller's steps and the keyed
// ones share nothing.
func cloneStep(st wire.BuildStep) wire.BuildStep {
	st.Packages = append([]string(nil), st.Packages...)
	st.Commands = append([]string(nil), st.Commands...)
	st.Env = append([]wire.EnvVar(nil), st.Env...)
	return st
}

// checkStep applies the rules of step i: fields its kind needs, and no
// field it does not use (an ignored field would change the key for
// nothing).
func checkStep(i int, st wire.BuildStep) error {
	f := fmt.Sprintf("steps[%d]", i)
	base := st.Kind == wire.StepRegistry || st.Kind == wire.StepDebootstrap
	switch {
	case i == 0 && !base:
		return fault.Invalid(f+".kind", "the first step is a base: %s or %s", wire.StepRegistry, wire.StepDebootstrap)
	case i > 0 && base:
		return fault.Invalid(f+".kind", "only the first step is a base (%s)", st.Kind)
	}
	used := map[string]bool{}
	var err error
	switch st.Kind {
	case wire.StepRegistry:
		used["ref"] = true
		err = checkRef(f, st.Ref)
	case wire.StepDebootstrap:
		used["suite"], used["mirror"], used["packages"] = true, true, true
		err = checkDebootstrap(f, st)
	case wire.StepApt:
		used["packages"] = true
		err = checkPackages(f, st.Packages, true)
	case wire.StepPip:
		used["packages"], used["requirements"] = true, true
		err = checkPip(f, st)
	case wire.StepRun:
		used["commands"] = true
		err = checkCommands(f, st.Commands)
	case wire.StepCopy:
		used["code"], used["path"] = true, true
		err = checkCopy(f, st)
	case wire.StepEnv:
		used["env"] = true
		err = checkEnv(f, st.Env)
	case wire.StepWorkdir:
		used["path"] = true
		err = checkPath(f+".path", st.Path)
	default:
		return fault.Invalid(f+".kind", "%.40q is not a step kind (REGISTRY, DEBOOTSTRAP, APT, PIP, RUN, COPY, ENV, WORKDIR)", st.Kind)
	}
	if err != nil {
		return err
	}
	return checkUnused(f, st, used)
}

// checkUnused refuses the fields step st's kind does not read.
func checkUnused(f string, st wire.BuildStep, used map[string]bool) error {
	set := map[string]bool{
		"ref": st.Ref != "", "suite": st.Suite != "", "mirror": st.Mirror != "",
		"packages": len(st.Packages) > 0, "requirements": st.Requirements != "",
		"commands": len(st.Commands) > 0, "code": st.Code != "", "path": st.Path != "", "env": len(st.Env) > 0,
	}
	for _, name := range []string{"ref", "suite", "mirror", "packages", "requirements", "commands", "code", "path", "env"} {
		if set[name] && !used[name] {
			return fault.Invalid(f+"."+name, "a %s step takes no %s", st.Kind, name)
		}
	}
	return nil
}

func checkRef(f, ref string) error {
	switch {
	case ref == "":
		return fault.Invalid(f+".ref", "name the base image (python:3.12-slim)")
	case len(ref) > MaxRefBytes:
		return fault.Invalid(f+".ref", "at most %d bytes", MaxRefBytes)
	case Reserved(ref):
		return ReservedError(f + ".ref")
	}
	if err := wire.CheckImage(ref); err != nil {
		return fault.Invalid(f+".ref", "%v", err)
	}
	return nil
}

func checkDebootstrap(f string, st wire.BuildStep) error {
	if !suiteRE.MatchString(st.Suite) {
		return fault.Invalid(f+".suite", "a Debian suite: lower-case letters, digits and '-' (bookworm)")
	}
	if st.Mirror != "" {
		u, err := url.Parse(st.Mirror)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(st.Mirror) > MaxPathBytes ||
			u.User != nil || strings.ContainsAny(st.Mirror, " \t\r\n\x00") {
			return fault.Invalid(f+".mirror", "an http(s) URL of a Debian mirror (https://deb.debian.org/debian)")
		}
	}
	return checkPackages(f, st.Packages, false)
}

func checkPip(f string, st wire.BuildStep) error {
	if len(st.Packages) == 0 && st.Requirements == "" {
		return fault.Invalid(f+".packages", "name packages or give a requirements file")
	}
	if len(st.Requirements) > MaxRequirementsBytes || strings.ContainsRune(st.Requirements, 0) {
		return fault.Invalid(f+".requirements", "at most %d bytes of text", MaxRequirementsBytes)
	}
	if len(st.Packages) == 0 {
		return nil
	}
	return checkPackages(f, st.Packages, true)
}

// checkPackages refuses empty names, options and anything that could
// split a command line (the agent passes them as arguments).
func checkPackages(f string, pkgs []string, required bool) error {
	switch {
	case required && len(pkgs) == 0:
		return fault.Invalid(f+".packages", "name at least one package")
	case len(pkgs) > MaxPackages:
		return fault.Invalid(f+".packages", "at most %d packages", MaxPackages)
	}
	for k, p := range pkgs {
		pf := fmt.Sprintf("%s.packages[%d]", f, k)
		switch {
		case strings.TrimSpace(p) == "" || len(p) > MaxPackageBytes:
			return fault.Invalid(pf, "a package name of 1 to %d bytes", MaxPackageBytes)
		case strings.ContainsAny(p, "\x00\r\n"):
			return fault.Invalid(pf, "one line, without NUL")
		case strings.HasPrefix(p, "-"):
			return fault.Invalid(pf, "%.40q is an option, not a package", p)
		}
	}
	return nil
}

func checkCommands(f string, cmds []string) error {
	switch {
	case len(cmds) == 0:
		return fault.Invalid(f+".commands", "name at least one command")
	case len(cmds) > MaxCommands:
		return fault.Invalid(f+".commands", "at most %d commands", MaxCommands)
	}
	total := 0
	for k, c := range cmds {
		total += len(c) + len(" && ")
		if total > MaxScriptBytes {
			return fault.Invalid(f+".commands", "at most %d bytes of commands in one step: split them over several run_commands", MaxScriptBytes)
		}
		cf := fmt.Sprintf("%s.commands[%d]", f, k)
		switch {
		case strings.TrimSpace(c) == "" || len(c) > MaxCommandBytes:
			return fault.Invalid(cf, "a command of 1 to %d bytes", MaxCommandBytes)
		case strings.ContainsRune(c, 0):
			return fault.Invalid(cf, "no NUL")
		}
	}
	return nil
}

func checkCopy(f string, st wire.BuildStep) error {
	if !hexRE.MatchString(st.Code) {
		return fault.Invalid(f+".code", "the content address (64 lower-case hex digits) of a zip uploaded as a code blob")
	}
	return checkPath(f+".path", st.Path)
}

// checkPath accepts a clean absolute path, one printable line.
func checkPath(f, p string) error {
	switch {
	case p == "" || !path.IsAbs(p):
		return fault.Invalid(f, "an absolute path")
	case len(p) > MaxPathBytes:
		return fault.Invalid(f, "at most %d bytes", MaxPathBytes)
	case strings.ContainsAny(p, "\x00\r\n\t"):
		return fault.Invalid(f, "one line, without NUL or tabs")
	case path.Clean(p) != p:
		return fault.Invalid(f, "%.70q is not clean (no '..', '.', '//' or trailing '/')", p)
	}
	return nil
}

func checkEnv(f string, env []wire.EnvVar) error {
	switch {
	case len(env) == 0:
		return fault.Invalid(f+".env", "name at least one variable")
	case len(env) > MaxStepEnv:
		return fault.Invalid(f+".env", "at most %d variables", MaxStepEnv)
	}
	seen := map[string]bool{}
	for k, e := range env {
		ef := fmt.Sprintf("%s.env[%d]", f, k)
		if err := wire.CheckEnvName(e.Name); err != nil {
			return fault.Invalid(ef+".name", "%v", err)
		}
		if seen[e.Name] {
			return fault.Invalid(ef+".name", "duplicate variable %q", e.Name)
		}
		seen[e.Name] = true
		if err := wire.CheckEnvValue(e.Value); err != nil {
			return fault.Invalid(ef+".value", "%v", err)
		}
		// The value goes into a Dockerfile's ENV line.
		if strings.ContainsAny(e.Value, "\r\n") {
			return fault.Invalid(ef+".value", "one line")
		}
	}
	return nil
}
