package wire

import (
	"fmt"
	"regexp"
	"strings"
)

// Venv is a blueprint as the process runtime builds it: a Python virtual
// environment (made with the node's own python3; the blueprint's base step
// is not used there) cached on the node under Key, the blueprint's key,
// with Steps, only PIP and ENV steps, applied in order.
type Venv struct {
	Key   string      `json:"key"`
	Steps []BuildStep `json:"steps"`
}

// venvKey is a blueprint key: it names a directory on the node.
var venvKey = regexp.MustCompile(`^[0-9a-f]{64}$`)

// CheckVenv checks what the process runtime relies on: a plain key and
// only PIP and ENV steps, with valid variables.
func CheckVenv(v *Venv) error {
	if v == nil {
		return nil
	}
	if !venvKey.MatchString(v.Key) {
		return fmt.Errorf("venv key %q is not a blueprint key (64 hex digits)", v.Key)
	}
	for i, st := range v.Steps {
		switch st.Kind {
		case StepPip:
			for _, p := range st.Packages {
				if err := checkVenvRequirement(p, false); err != nil {
					return fmt.Errorf("venv step %d: package %.60q: %w", i, p, err)
				}
			}
			if err := checkVenvRequirements(st.Requirements); err != nil {
				return fmt.Errorf("venv step %d: requirements: %w", i, err)
			}
		case StepEnv:
			for _, e := range st.Env {
				if err := CheckEnvName(e.Name); err != nil {
					return fmt.Errorf("venv step %d: %w", i, err)
				}
			}
		default:
			return fmt.Errorf("venv step %d: %s steps cannot run in a virtual environment (only PIP and ENV)", i, st.Kind)
		}
	}
	return nil
}

// On a process node pip runs as the agent (maybe root), outside any
// container, so a virtual environment's requirements are names only: a
// name with extras, version specifiers and markers. Refused (the
// blueprint then needs a container node): options (--index-url,
// --no-binary, -e, -r /etc/… and -c, whose lines pip echoes into the
// log), paths and URLs (a local folder or sdist is built, running its
// setup code, whatever --only-binary says), direct references (@) and
// ${VAR} (pip expands the agent's variables in requirements files).
// Only a per-requirement --hash is kept.
func checkVenvRequirement(req string, hashes bool) error {
	switch {
	case strings.TrimSpace(req) == "" || strings.ContainsAny(req, "\x00\r\n"):
		return fmt.Errorf("empty or not one line")
	case strings.ContainsAny(req, "/\\@$") || strings.HasPrefix(req, "."):
		return fmt.Errorf("only package names with versions (no paths, URLs, direct references or variables) on the process runtime")
	}
	for k, tok := range strings.Fields(req) {
		if !strings.HasPrefix(tok, "-") {
			continue
		}
		if !hashes || k == 0 || !strings.HasPrefix(tok, "--hash=") {
			return fmt.Errorf("%.40q is an option: pip options are refused on the process runtime", tok)
		}
	}
	return nil
}

// checkVenvRequirements checks each requirement of a requirements file's
// text (continuations joined, comments dropped) with checkVenvRequirement.
func checkVenvRequirements(text string) error {
	if strings.ContainsRune(text, 0) {
		return fmt.Errorf("NUL in the text")
	}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\\\n", " ")
	for n, line := range strings.Split(text, "\n") {
		if i := strings.Index(line, "#"); i == 0 || (i > 0 && (line[i-1] == ' ' || line[i-1] == '\t')) {
			line = line[:i]
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if strings.ContainsRune(line, '\r') {
			return fmt.Errorf("line %d: a carriage return", n+1)
		}
		if err := checkVenvRequirement(line, true); err != nil {
			return fmt.Errorf("line %d: %w", n+1, err)
		}
	}
	return nil
}
