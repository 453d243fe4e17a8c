package secrets

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/levers9/levers9/internal/fault"
)

// Limits of one secret.
const (
	MaxKeys       = 100
	MaxValueBytes = 64 << 10
)

var (
	keyPattern = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)
	// namePattern is the ent schema's for names.
	namePattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$`)
)

// maxKeyLength bounds a variable's name.
const maxKeyLength = 256

// CheckKey refuses an environment variable name a secret may not set:
// upper-case letters, digits and '_', not starting with a digit, and none
// of the LEVERS9_ variables the runner relies on.
func CheckKey(k string) error {
	switch {
	case len(k) > maxKeyLength:
		return fmt.Errorf("variable name %.40q… is longer than %d characters", k, maxKeyLength)
	case !keyPattern.MatchString(k):
		return fmt.Errorf("variable name %q must be upper-case letters, digits and _, not starting with a digit", k)
	case strings.HasPrefix(k, "LEVERS9_"):
		return fmt.Errorf("variable name %q: LEVERS9_ variables are levers9's own", k)
	}
	return nil
}

// CheckValue refuses a value no environment can carry, or too large.
func CheckValue(k, v string) error {
	switch {
	case len(v) > MaxValueBytes:
		return fmt.Errorf("the value of %s is %d bytes, at most %d", k, len(v), MaxValueBytes)
	case strings.ContainsRune(v, 0):
		return fmt.Errorf("the value of %s contains a NUL byte, which no environment variable can", k)
	case !utf8.ValidString(v):
		return fmt.Errorf("the value of %s is not UTF-8 text", k)
	}
	return nil
}

// ParseAssignment splits the CLI's KEY=VALUE (the value may contain '='
// and be empty) and checks both sides. Errors never quote the value.
func ParseAssignment(s string) (key, value string, err error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", fmt.Errorf("%.40q is not KEY=VALUE", k)
	}
	if err := CheckKey(k); err != nil {
		return "", "", err
	}
	if err := CheckValue(k, v); err != nil {
		return "", "", err
	}
	return k, v, nil
}

// checkSecret checks a secret's name and values before anything is
// written.
func checkSecret(name string, values map[string]string) error {
	if !namePattern.MatchString(name) {
		return fault.Invalid("name", "a secret's name is 1 to 63 letters, digits, '.', '_' or '-', starting and ending with a letter or digit")
	}
	if len(values) == 0 {
		return fault.Invalid("values", "a secret holds at least one variable")
	}
	if len(values) > MaxKeys {
		return fault.Invalid("values", "a secret holds at most %d variables (got %d)", MaxKeys, len(values))
	}
	for _, k := range slices.Sorted(maps.Keys(values)) {
		v := values[k]
		if err := CheckKey(k); err != nil {
			return fault.Invalid("values", "%s", err.Error())
		}
		if err := CheckValue(k, v); err != nil {
			return fault.Invalid("values", "%s", err.Error())
		}
	}
	return nil
}
