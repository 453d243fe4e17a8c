package jobspec

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/levers9/levers9/internal/wire"
)

// FieldError is a problem with one field of a spec, named by its path
// ("services[1].name") so that forms and clients can point at it.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Limits on a spec regardless of queue; queues set tighter ones. The
// rules of names, variables, ports, commands and mounts are wire's, which
// the server applies again to every start and the agent on receipt.
const (
	MaxServices  = wire.MaxServices
	MaxMounts    = wire.MaxMounts
	MaxEnv       = wire.MaxEnv
	MaxArgs      = wire.MaxWords
	MaxStringLen = wire.MaxWordBytes
	MaxPriority  = 1000
	MaxRetries   = 100
	MaxTimeout   = wire.MaxTimeout
	MaxCPU       = 4096
	MaxMemoryMiB = 64 << 20 // 64 TiB
	MaxGPUs      = 1024
)

// ReservedPrefix starts the image repository of every tenant's
// blueprints (levers9-bp/TENANT:KEY).
const ReservedPrefix = "levers9-bp/"

// ReservedMessage is why an image under ReservedPrefix is refused.
const ReservedMessage = "images under levers9-bp/ are blueprints': name the blueprint instead"

// ReservedImage reports whether image names a blueprint's image: its
// repository starts with levers9-bp/, after any registry host (Docker
// resolves docker.io/levers9-bp/x to the local levers9-bp/x), in any case.
// Only the blueprints, functions and sandboxes layers put such an image
// into a job, so a tenant cannot run another tenant's blueprint by name.
func ReservedImage(image string) bool {
	image = strings.ToLower(image)
	return strings.HasPrefix(image, ReservedPrefix) || strings.Contains(image, "/"+ReservedPrefix)
}

// Validate checks everything about j that does not depend on a queue,
// and returns every problem found (joined FieldErrors).
func Validate(j Job) error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, &FieldError{Field: field, Message: fmt.Sprintf(format, a...)})
	}
	check := func(field string, err error) {
		if err != nil {
			errs = append(errs, &FieldError{Field: field, Message: err.Error()})
		}
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
	addresses := make([]wire.NamedPorts, 0, len(j.Services))
	var fixed []wire.FixedPort
	for i, s := range j.Services {
		f := fmt.Sprintf("services[%d]", i)
		if err := wire.CheckServiceName(s.Name); err != nil {
			check(f+".name", err)
		} else if names[s.Name] {
			bad(f+".name", "duplicate service name %q", s.Name)
		}
		names[s.Name] = true
		check(f+".command", wire.CheckCommand(s.Image, s.Command))
		if s.TTY && !j.Interactive {
			bad(f+".tty", "a terminal needs an interactive job (set interactive)")
		}
		check(f+".image", wire.CheckImage(s.Image))
		if j.Kind() == KindJob && ReservedImage(s.Image) {
			bad(f+".image", "%s", ReservedMessage)
		}
		if s.Venv != nil {
			// Only functions' and sandboxes' services get one, from
			// their blueprint (the image it stands in for).
			if k := j.Kind(); k != KindFunction && k != KindSandbox {
				bad(f+".venv", "only a function's or sandbox's blueprint runs in a virtual environment")
			} else if !ReservedImage(s.Image) {
				bad(f+".venv", "a virtual environment stands in for a blueprint's image")
			}
			check(f+".venv", wire.CheckVenv(s.Venv))
		}
		if len(s.Command)+len(s.Args) > MaxArgs {
			bad(f+".args", "at most %d command words and arguments", MaxArgs)
		}
		for _, w := range append(append([]string(nil), s.Command...), s.Args...) {
			if err := wire.CheckWord(w); err != nil {
				check(f+".command", err)
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
			tf := fmt.Sprintf("%s.gpuTypes[%d]", f, k)
			if err := wire.CheckGPUType(t); err != nil {
				check(tf, err)
			} else if seenType[t] {
				bad(tf, "%q is listed twice", t)
			}
			seenType[t] = true
		}
		if len(s.Env) > MaxEnv {
			bad(f+".env", "at most %d variables", MaxEnv)
		}
		seenEnv := map[string]bool{}
		for k, e := range s.Env {
			ef := fmt.Sprintf("%s.env[%d]", f, k)
			if err := wire.CheckEnvName(e.Name); err != nil {
				check(ef+".name", err)
			} else if seenEnv[e.Name] {
				bad(ef+".name", "duplicate variable %q", e.Name)
			}
			seenEnv[e.Name] = true
			check(ef+".value", wire.CheckEnvValue(e.Value))
		}
		np := wire.NamedPorts{Service: s.Name}
		seenPort := map[string]bool{}
		for k, p := range s.Ports {
			pf := fmt.Sprintf("%s.ports[%d]", f, k)
			if err := wire.CheckPortName(p.Name); err != nil {
				check(pf+".name", err)
			} else if seenPort[p.Name] {
				bad(pf+".name", "duplicate port %q", p.Name)
			}
			seenPort[p.Name] = true
			check(pf+".port", wire.CheckPortNumber(p.Port, false))
			np.Ports = append(np.Ports, p.Name)
			fixed = append(fixed, wire.FixedPort{Service: i, Port: k, Number: p.Port})
		}
		addresses = append(addresses, np)
	}
	for _, fe := range wire.CheckAddressNames(addresses) {
		bad(fe.Field, "%s", fe.Message)
	}
	for _, fe := range wire.CheckFixedPorts(fixed) {
		bad(fe.Field, "%s", fe.Message)
	}
	if len(j.Mounts) > MaxMounts {
		bad("mounts", "at most %d mounts", MaxMounts)
	}
	var paths []string
	for i, m := range j.Mounts {
		f := fmt.Sprintf("mounts[%d]", i)
		if strings.TrimSpace(m.Bucket) == "" {
			bad(f+".bucket", "is required")
		}
		if err := wire.CheckMountPath(m.Path); err != nil {
			check(f+".path", err)
			continue
		}
		for _, p := range paths {
			if wire.MountsOverlap(p, m.Path) {
				bad(f+".path", "%q overlaps mount %q", m.Path, p)
				break
			}
		}
		paths = append(paths, m.Path)
	}
	return errors.Join(errs...)
}
