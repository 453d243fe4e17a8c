package jobspec

import (
	"errors"
	"fmt"
	"math"
	"path"
	"regexp"
	"strings"
)

// FieldError is a problem with one field of a spec, named by its path
// ("services[1].name") so that forms and clients can point at it.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Limits on a spec regardless of queue; queues set tighter ones.
const (
	MaxServices   = 64
	MaxMounts     = 64
	MaxEnv        = 256
	MaxArgs       = 1024
	MaxStringLen  = 4096
	MaxPriority   = 1000
	MaxRetries    = 100
	MaxTimeout    = 366 * 24 * 3600
	MaxCPU        = 4096
	MaxMemoryMiB  = 64 << 20 // 64 TiB
	MaxGPUs       = 1024
	maxNameLength = 63
)

var (
	// Service names become hostnames, so they are DNS labels.
	serviceName = regexp.MustCompile(`^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$`)
	envName     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	portName    = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)
	gpuType     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
)

// Validate checks everything about j that does not depend on a queue,
// and returns every problem found (joined FieldErrors).
func Validate(j Job) error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, &FieldError{Field: field, Message: fmt.Sprintf(format, a...)})
	}
	if len(j.Name) > 200 || strings.ContainsAny(j.Name, "\x00\n\r") {
		bad("name", "must be one line of at most 200 characters")
	}
	if strings.TrimSpace(j.Queue) == "" {
		bad("queue", "is required")
	}
	if j.Priority < -MaxPriority || j.Priority > MaxPriority {
		bad("priority", "must be between %d and %d", -MaxPriority, MaxPriority)
	}
	if j.TimeoutSeconds < 0 || j.TimeoutSeconds > MaxTimeout {
		bad("timeoutSeconds", "must be between 0 (none) and %d", MaxTimeout)
	}
	if j.Retries < 0 || j.Retries > MaxRetries {
		bad("retries", "must be between 0 and %d", MaxRetries)
	}
	switch {
	case len(j.Services) == 0:
		bad("services", "a job needs at least one service")
	case len(j.Services) > MaxServices:
		bad("services", "at most %d services", MaxServices)
	}
	names := map[string]bool{}
	for i, s := range j.Services {
		f := fmt.Sprintf("services[%d]", i)
		switch {
		case s.Name == "":
			bad(f+".name", "is required")
		case !serviceName.MatchString(s.Name):
			bad(f+".name", "%q is not a valid service name: use lower-case letters, digits and '-', starting with a letter, at most %d characters", s.Name, maxNameLength)
		case names[s.Name]:
			bad(f+".name", "duplicate service name %q", s.Name)
		}
		names[s.Name] = true
		if len(s.Command) == 0 && s.Image == "" {
			bad(f+".command", "a service needs an image or a command")
		}
		if len(s.Command)+len(s.Args) > MaxArgs {
			bad(f+".args", "at most %d command words and arguments", MaxArgs)
		}
		for _, w := range append(append([]string{s.Image}, s.Command...), s.Args...) {
			if len(w) > MaxStringLen || strings.ContainsRune(w, 0) {
				bad(f+".command", "words must be at most %d bytes without NUL", MaxStringLen)
				break
			}
		}
		if math.IsNaN(s.CPU) || s.CPU < 0 || s.CPU > MaxCPU {
			bad(f+".cpu", "must be between 0 and %d", MaxCPU)
		}
		if s.MemoryMiB < 0 || s.MemoryMiB > MaxMemoryMiB {
			bad(f+".memoryMiB", "must be between 0 and %d", int64(MaxMemoryMiB))
		}
		if s.GPUs < 0 || s.GPUs > MaxGPUs {
			bad(f+".gpus", "must be between 0 and %d", MaxGPUs)
		}
		if s.GPUs > 0 && len(s.GPUTypes) == 0 {
			bad(f+".gpuTypes", "name the GPU type (or a preference list) for %d GPUs", s.GPUs)
		}
		seenType := map[string]bool{}
		for k, t := range s.GPUTypes {
			if !gpuType.MatchString(t) || seenType[t] {
				bad(fmt.Sprintf("%s.gpuTypes[%d]", f, k), "%q is not a valid or is a repeated GPU type", t)
			}
			seenType[t] = true
		}
		if len(s.Env) > MaxEnv {
			bad(f+".env", "at most %d variables", MaxEnv)
		}
		seenEnv := map[string]bool{}
		for k, e := range s.Env {
			ef := fmt.Sprintf("%s.env[%d]", f, k)
			switch {
			case !envName.MatchString(e.Name):
				bad(ef+".name", "%q is not a valid environment variable name", e.Name)
			case strings.HasPrefix(strings.ToUpper(e.Name), "LEVERS9_"):
				bad(ef+".name", "names starting with LEVERS9_ are set by levers9")
			case seenEnv[e.Name]:
				bad(ef+".name", "duplicate variable %q", e.Name)
			}
			seenEnv[e.Name] = true
			if len(e.Value) > 64*1024 || strings.ContainsRune(e.Value, 0) {
				bad(ef+".value", "must be at most 64 KiB without NUL")
			}
		}
		seenPort := map[string]bool{}
		for k, p := range s.Ports {
			pf := fmt.Sprintf("%s.ports[%d]", f, k)
			if !portName.MatchString(p.Name) || seenPort[p.Name] {
				bad(pf+".name", "%q is not a valid or is a repeated port name", p.Name)
			}
			seenPort[p.Name] = true
			if p.Port < 0 || p.Port > 65535 {
				bad(pf+".port", "must be between 1 and 65535, or 0 to pick a free one")
			}
		}
	}
	if len(j.Mounts) > MaxMounts {
		bad("mounts", "at most %d mounts", MaxMounts)
	}
	paths := map[string]bool{}
	for i, m := range j.Mounts {
		f := fmt.Sprintf("mounts[%d]", i)
		if strings.TrimSpace(m.Bucket) == "" {
			bad(f+".bucket", "is required")
		}
		if err := checkMountPath(m.Path); err != nil {
			bad(f+".path", "%v", err)
		} else if paths[m.Path] {
			bad(f+".path", "%q is mounted twice", m.Path)
		}
		paths[m.Path] = true
	}
	return errors.Join(errs...)
}

// checkMountPath accepts a clean absolute path that is not the root.
func checkMountPath(p string) error {
	switch {
	case p == "" || !strings.HasPrefix(p, "/"):
		return errors.New("must be an absolute path")
	case len(p) > 1024 || strings.ContainsRune(p, 0):
		return errors.New("must be at most 1024 bytes without NUL")
	case path.Clean(p) != p:
		return fmt.Errorf("%q is not clean (no '..', '.', '//' or trailing '/')", p)
	case p == "/":
		return errors.New("cannot mount over /")
	}
	return nil
}
