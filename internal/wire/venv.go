package wire

import (
	"fmt"
	"regexp"
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
				if p == "" || p[0] == '-' || hasNUL(p) {
					return fmt.Errorf("venv step %d: package %q", i, p)
				}
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
