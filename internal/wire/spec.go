package wire

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
)

// The rules of a job spec live here, once: the server checks a submission
// with them (internal/jobspec), checks every Start before sending it, and
// the agent checks the Start it receives. The agent imports only this
// package from the server side, so this is where they can be shared.

// Limits on one job's spec. Queues set tighter ones on resources.
const (
	MaxNameLength     = 63        // service names (DNS labels)
	MaxPortNameLength = 32        // port names
	MaxEnvNameLength  = 256       // variable names
	MaxEnv            = 256       // variables per service
	MaxWords          = 1024      // command words and arguments per service
	MaxWordBytes      = 4096      // one command word, argument or image
	MaxEnvValueBytes  = 64 * 1024 // one variable's value
	MaxMountPathBytes = 1024      // a mount's path inside the job
	MaxImageBytes     = 512       // an image reference
)

// ReservedEnvPrefix starts the variables levers9 sets itself (job ID,
// service, the addresses of sibling services); a spec may not set them.
const ReservedEnvPrefix = "LEVERS9_"

var (
	// Service names become hostnames (network aliases), so they are DNS
	// labels: lower-case letters, digits and '-', starting with a letter.
	serviceName = newPattern(`^[a-z]([a-z0-9-]*[a-z0-9])?$`, MaxNameLength)
	portName    = newPattern(`^[a-z][a-z0-9_]*$`, 32)
	envName     = newPattern(`^[A-Za-z_][A-Za-z0-9_]*$`, 256)
	gpuType     = newPattern(`^[A-Za-z0-9][A-Za-z0-9._-]*$`, 64)
	// An image reference as Docker parses it: [registry[:port]/]path[:tag][@digest].
	imageRef = regexp.MustCompile(`^` +
		`(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*(?::[0-9]+)?/)?` +
		`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*` +
		`(?::[A-Za-z0-9_][A-Za-z0-9_.-]*)?` +
		`(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$`)
)

// pattern is a regular expression with a length limit. Limits are checked
// apart: counted repetitions ({0,255}) compile into programs that large
// that every program linking this package (the service supervisor among
// them) would start milliseconds slower.
type pattern struct {
	re  *regexp.Regexp
	max int
}

func newPattern(expr string, max int) pattern { return pattern{regexp.MustCompile(expr), max} }

// MatchString reports whether s is at most max bytes and matches.
func (p pattern) MatchString(s string) bool { return len(s) <= p.max && p.re.MatchString(s) }

// CheckServiceName accepts a DNS label of at most 63 characters.
func CheckServiceName(name string) error {
	switch {
	case name == "":
		return errors.New("is required")
	case !serviceName.MatchString(name):
		return fmt.Errorf("%.70q is not a valid service name: use lower-case letters, digits and '-', starting with a letter and not ending with '-', at most %d characters (it becomes the service's hostname)", name, MaxNameLength)
	}
	return nil
}

// CheckPortName accepts lower-case letters, digits and '_', starting with a
// letter, at most 32 characters.
func CheckPortName(name string) error {
	if !portName.MatchString(name) {
		return fmt.Errorf("%.40q is not a valid port name: use lower-case letters, digits and '_', starting with a letter, at most %d characters", name, MaxPortNameLength)
	}
	return nil
}

// CheckPortNumber accepts 1 to 65535, and 0 (the agent picks a free port)
// unless assigned: ports the agent reports are never 0.
func CheckPortNumber(port int, assigned bool) error {
	switch {
	case assigned && (port < 1 || port > 65535):
		return fmt.Errorf("is %d, must be between 1 and 65535", port)
	case port < 0 || port > 65535:
		return fmt.Errorf("is %d, must be between 1 and 65535, or 0 to pick a free one", port)
	}
	return nil
}

// CheckEnvName accepts a shell variable name that does not start with
// ReservedEnvPrefix (in any case).
func CheckEnvName(name string) error {
	switch {
	case !envName.MatchString(name):
		return fmt.Errorf("%.70q is not a valid variable name: use letters, digits and '_', not starting with a digit, at most %d characters", name, MaxEnvNameLength)
	case strings.HasPrefix(strings.ToUpper(name), ReservedEnvPrefix):
		return fmt.Errorf("names starting with %s are set by levers9", ReservedEnvPrefix)
	}
	return nil
}

// CheckEnvValue accepts at most 64 KiB without NUL bytes.
func CheckEnvValue(v string) error {
	if len(v) > MaxEnvValueBytes || hasNUL(v) {
		return fmt.Errorf("must be at most %d bytes without NUL", MaxEnvValueBytes)
	}
	return nil
}

// CheckGPUType accepts a GPU type name such as H100 or A10G.
func CheckGPUType(t string) error {
	if !gpuType.MatchString(t) {
		return fmt.Errorf("%.70q is not a valid GPU type: letters, digits, '.', '_' and '-', at most 64", t)
	}
	return nil
}

// CheckWord accepts one command word or argument: exec refuses NUL bytes.
func CheckWord(w string) error {
	if len(w) > MaxWordBytes || hasNUL(w) {
		return fmt.Errorf("words must be at most %d bytes without NUL", MaxWordBytes)
	}
	return nil
}

// CheckImage accepts an image reference as Docker reads it
// ("python:3.12", "registry:5000/team/app@sha256:…"); empty means none.
func CheckImage(image string) error {
	if image == "" {
		return nil
	}
	if len(image) > MaxImageBytes || !imageRef.MatchString(image) {
		return fmt.Errorf("%.70q is not a valid image reference: [registry/]name[:tag][@digest], lower-case name", image)
	}
	return nil
}

// CheckCommand says whether a service can start at all: it needs an image
// (whose default command runs) or a command.
func CheckCommand(image string, command []string) error {
	if len(command) == 0 && image == "" {
		return errors.New("a service needs a command or an image")
	}
	return nil
}

// CheckMountPath accepts a clean absolute path other than "/", printable,
// at most 1024 bytes.
func CheckMountPath(p string) error {
	switch {
	case p == "" || !path.IsAbs(p):
		return fmt.Errorf("%.70q must be an absolute path", p)
	case len(p) > MaxMountPathBytes || !printable(p):
		return fmt.Errorf("must be at most %d printable bytes", MaxMountPathBytes)
	case path.Clean(p) != p:
		return fmt.Errorf("%.70q is not clean (no '..', '.', '//' or trailing '/')", p)
	case p == "/":
		return errors.New("cannot mount over /")
	}
	return nil
}

// MountsOverlap reports whether two clean mount paths are the same or one
// lies inside the other: a job cannot mount both.
func MountsOverlap(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

// EnvKey turns a service or port name into its part of a variable name:
// upper case, '-' as '_'.
func EnvKey(name string) string {
	return strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// HostVar is the variable holding service's host, for every service of
// its job: LEVERS9_<SERVICE>_HOST.
func HostVar(service string) string {
	return ReservedEnvPrefix + EnvKey(service) + "_HOST"
}

// PortVar is the variable holding the host port named port of service:
// LEVERS9_<SERVICE>_PORT_<NAME>.
func PortVar(service, port string) string {
	return ReservedEnvPrefix + EnvKey(service) + "_PORT_" + EnvKey(port)
}

// NamedPorts are the names a service contributes to its job's address
// variables.
type NamedPorts struct {
	Service string
	Ports   []string
}

// CheckAddressNames refuses services whose names map to the same address
// variable (service "a-port" port "x" and service "a" port "port_x" both
// give LEVERS9_A_PORT_X), naming the later field
// ("services[1].ports[0].name").
func CheckAddressNames(services []NamedPorts) []FieldError {
	var out []FieldError
	seen := map[string]string{}
	claim := func(key, what, field string) {
		if prev, ok := seen[key]; ok {
			if prev != what { // plain duplicates are reported on their own
				out = append(out, FieldError{Field: field, Message: fmt.Sprintf("%s and %s would both set %s", prev, what, key)})
			}
			return
		}
		seen[key] = what
	}
	for i, s := range services {
		f := fmt.Sprintf("services[%d]", i)
		claim(HostVar(s.Service), fmt.Sprintf("service %q", s.Service), f+".name")
		for k, p := range s.Ports {
			claim(PortVar(s.Service, p), fmt.Sprintf("port %q of service %q", p, s.Service), fmt.Sprintf("%s.ports[%d].name", f, k))
		}
	}
	return out
}

// FixedPort is a port number a service asks for.
type FixedPort struct {
	Service int // index of the service
	Port    int // index of the port in the service
	Number  int
}

// CheckFixedPorts refuses a job whose services ask for the same fixed
// port number twice: they run on one node and would collide on it.
func CheckFixedPorts(ports []FixedPort) []FieldError {
	var out []FieldError
	first := map[int]FixedPort{}
	for _, p := range ports {
		if p.Number == 0 {
			continue
		}
		if prev, ok := first[p.Number]; ok {
			out = append(out, FieldError{
				Field:   fmt.Sprintf("services[%d].ports[%d].port", p.Service, p.Port),
				Message: fmt.Sprintf("port %d is also asked for by services[%d].ports[%d]", p.Number, prev.Service, prev.Port),
			})
			continue
		}
		first[p.Number] = p
	}
	return out
}
