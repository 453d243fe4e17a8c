package runtime

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/levers9/levers9/internal/wire"
)

// Validate checks spec by the one definition of a valid job that the server
// and the agent share (wire.Start's rules: names, variables, ports, images,
// address variables, fixed ports), plus what only a node knows: mount
// directories are absolute. Runtimes add only their own limits.
func Validate(spec JobSpec) error {
	if spec.Attempt < 0 {
		return fmt.Errorf("attempt %d: attempts count from 1 (0 means 1)", spec.Attempt)
	}
	if spec.Timeout < 0 {
		return fmt.Errorf("negative timeout %s", spec.Timeout)
	}
	if err := spec.start().Validate(); err != nil {
		return err
	}
	var paths []string
	for _, m := range spec.Mounts {
		if err := wire.CheckMountPath(m.Path); err != nil {
			return fmt.Errorf("mount: %w", err)
		}
		if !filepath.IsAbs(m.Dir) {
			return fmt.Errorf("mount %s: directory %q is not absolute", m.Path, m.Dir)
		}
		for _, p := range paths {
			if wire.MountsOverlap(p, m.Path) {
				return fmt.Errorf("mount %s overlaps mount %s", m.Path, p)
			}
		}
		paths = append(paths, m.Path)
	}
	return nil
}

// start is spec as the wire.Start it came from, without its mounts (whose
// buckets the runtime never sees).
func (spec JobSpec) start() wire.Start {
	m := wire.Start{JobID: spec.ID, Attempt: spec.Attempt, Tenant: spec.Tenant, TimeoutSeconds: int(spec.Timeout.Seconds())}
	for _, s := range spec.Services {
		ss := wire.ServiceStart{
			Name: s.Name, Image: s.Image, Command: s.Command, Args: s.Args,
			CPU: s.CPU, MemoryMiB: s.MemoryMiB, GPUs: s.GPUs, TTY: s.TTY, Venv: s.Venv,
		}
		for _, e := range s.Env {
			ss.Env = append(ss.Env, wire.EnvVar{Name: e.Name, Value: e.Value})
		}
		for _, p := range s.Ports {
			ss.Ports = append(ss.Ports, wire.Port{Name: p.Name, Port: p.Port})
		}
		m.Services = append(m.Services, ss)
	}
	return m
}

// errNoCommand is the process runtime's own limit: it has no images.
var errNoCommand = errors.New("the process runtime needs a command")
