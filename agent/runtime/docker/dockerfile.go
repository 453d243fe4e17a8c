package docker

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/levers9/levers9/internal/wire"
)

// codeDirInContext is where a COPY step's unpacked zip goes in the build
// context.
const codeDirInContext = "code"

// stepInstruction is the one Dockerfile instruction (after `FROM prev`)
// that builds step s: one image layer.
func stepInstruction(s wire.BuildStep) (string, error) {
	switch s.Kind {
	case wire.StepApt:
		if len(s.Packages) == 0 {
			return "", fmt.Errorf("an APT step needs packages")
		}
		return runShell("apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends " +
			shellWords(s.Packages) + " && rm -rf /var/lib/apt/lists/*"), nil
	case wire.StepPip:
		if len(s.Packages) == 0 && s.Requirements == "" {
			return "", fmt.Errorf("a PIP step needs packages or requirements")
		}
		cmd := "python3 -m pip install --no-cache-dir"
		if len(s.Packages) > 0 {
			cmd += " " + shellWords(s.Packages)
		}
		if s.Requirements != "" {
			// Written and removed within the step's one layer.
			const req = "/tmp/levers9-requirements.txt"
			cmd = "printf '%s' " + shellQuote(s.Requirements) + " > " + req + " && " + cmd + " -r " + req + " && rm -f " + req
		}
		return runShell(cmd), nil
	case wire.StepRun:
		if len(s.Commands) == 0 {
			return "", fmt.Errorf("a RUN step needs commands")
		}
		return runShell(strings.Join(s.Commands, " && ")), nil
	case wire.StepCopy:
		if s.Path == "" {
			return "", fmt.Errorf("a COPY step needs a path")
		}
		return "COPY " + jsonArray(codeDirInContext+"/", s.Path), nil
	case wire.StepEnv:
		if len(s.Env) == 0 {
			return "", fmt.Errorf("an ENV step needs variables")
		}
		var b strings.Builder
		b.WriteString("ENV")
		for _, e := range s.Env {
			if e.Name == "" || strings.ContainsAny(e.Name, "= \t\r\n\"'\\$") {
				return "", fmt.Errorf("environment variable name %.80q is not valid", e.Name)
			}
			if strings.ContainsAny(e.Value, "\r\n") {
				return "", fmt.Errorf("environment variable %s: a value may not span lines", e.Name)
			}
			b.WriteString(" " + e.Name + "=" + dockerfileQuote(e.Value))
		}
		return b.String(), nil
	case wire.StepWorkdir:
		if !path.IsAbs(s.Path) || strings.ContainsAny(s.Path, "\r\n") {
			return "", fmt.Errorf("a WORKDIR step needs an absolute path on one line")
		}
		// Dockerfile substitutes $VARS in WORKDIR: escaped, the path is
		// taken as written.
		return "WORKDIR " + strings.ReplaceAll(strings.ReplaceAll(s.Path, `\`, `\\`), "$", `\$`), nil
	}
	return "", fmt.Errorf("step kind %.20q is not built with a Dockerfile", s.Kind)
}

// runShell is a RUN in exec form: the script's text goes to sh as is
// (JSON escapes newlines and quotes), never through Dockerfile parsing.
func runShell(script string) string {
	return "RUN " + jsonArray("/bin/sh", "-c", script)
}

func jsonArray(words ...string) string {
	b, _ := json.Marshal(words)
	return string(b)
}

// shellQuote quotes s for sh as one word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellWords(ws []string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = shellQuote(w)
	}
	return strings.Join(q, " ")
}

// dockerfileQuote double-quotes an ENV value: backslash, quote and $ are
// escaped, so the value is taken literally.
func dockerfileQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`)
	return `"` + r.Replace(s) + `"`
}

// stepSummary is a step on one line, for the build's log.
func stepSummary(s wire.BuildStep) string {
	var out string
	switch s.Kind {
	case wire.StepRegistry:
		out = s.Ref
	case wire.StepDebootstrap:
		out = strings.TrimSpace(s.Suite + " " + strings.Join(s.Packages, ","))
	case wire.StepApt:
		out = strings.Join(s.Packages, " ")
	case wire.StepPip:
		out = strings.Join(s.Packages, " ")
		if s.Requirements != "" {
			out = strings.TrimSpace(out + " -r requirements")
		}
	case wire.StepRun:
		out = strings.Join(s.Commands, " && ")
	case wire.StepCopy:
		out = s.Path
		if len(s.Code) >= 12 {
			out = s.Code[:12] + " → " + s.Path
		}
	case wire.StepEnv:
		names := make([]string, len(s.Env))
		for i, e := range s.Env {
			names[i] = e.Name
		}
		out = strings.Join(names, " ")
	case wire.StepWorkdir:
		out = s.Path
	}
	out = strings.Join(strings.Fields(out), " ")
	if len(out) > 120 {
		out = strings.ToValidUTF8(out[:117], "") + "..."
	}
	return out
}
