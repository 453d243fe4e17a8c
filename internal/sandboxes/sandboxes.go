// Package sandboxes runs sandboxes: containers of a blueprint (or image)
// that stay up doing nothing until the user runs commands in them through
// the relay, reads and writes their files, reaches their ports, or
// snapshots their file system to a new blueprint. A sandbox is a job of
// kind SANDBOX, billed like any job, ended by its owner, its timeout or
// its queue's idle stop.
package sandboxes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/blueprints"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/wire"
)

// ServiceName is a sandbox's one service.
const ServiceName = "sandbox"

// Bounds of a sandbox.
const (
	DefaultTimeout = 3600
	MaxTimeout     = 86400
	MaxPorts       = 16
)

// KeepAlive is a sandbox's command: it does nothing until stopped, and
// stops at once when asked (a shell's sleep would hold SIGTERM for up to
// an hour).
var KeepAlive = []string{"sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"}

// Service creates sandboxes.
type Service struct {
	DB         *database.DB
	Jobs       *jobs.Service
	Blueprints *blueprints.Service
	Log        *slog.Logger
}

// Input is a sandbox to create.
type Input struct {
	Name           string
	Blueprint      string // a READY blueprint's ID; or Image
	Image          string
	Queue, Project string
	CPU            float64
	MemoryMiB      int64
	GPUs           int
	GPUTypes       []string
	TimeoutSeconds int   // 0: 3600
	Ports          []int // container ports reached through the relay
	Env            []jobspec.EnvVar
}

// Create submits the sandbox's job (interactive, kind SANDBOX) as the
// viewer in ctx: its image is the blueprint's, else Image, else the
// queue's or node's default.
func (s *Service) Create(ctx context.Context, in Input) (*ent.Job, error) {
	if err := check(in); err != nil {
		return nil, err
	}
	image := in.Image
	var venv *wire.Venv
	if in.Blueprint != "" {
		bp, err := s.Blueprints.Ready(ctx, "blueprint", in.Blueprint)
		if err != nil {
			return nil, err
		}
		// A blueprint of pip packages may also run on a node without
		// containers, as a virtual environment.
		image, venv = bp.Image, blueprints.Venv(bp)
	}
	spec := Spec(in, image)
	spec.Services[0].Venv = venv
	j, err := s.Jobs.Submit(ctx, spec)
	if err != nil {
		return nil, inputError(err)
	}
	return j, nil
}

// check refuses what Spec would not make a sandbox of.
func check(in Input) error {
	switch {
	case in.Blueprint != "" && in.Image != "":
		return fault.Invalid("image", "name a blueprint or an image, not both")
	case jobspec.ReservedImage(in.Image):
		return blueprints.ReservedError("image")
	case in.TimeoutSeconds < 0 || in.TimeoutSeconds > MaxTimeout:
		return fault.Invalid("timeoutSeconds", "must be between 1 and %d (0: %d)", MaxTimeout, DefaultTimeout)
	case len(in.Ports) > MaxPorts:
		return fault.Invalid("ports", "at most %d ports, not %d", MaxPorts, len(in.Ports))
	}
	seen := make(map[int]bool, len(in.Ports))
	for i, p := range in.Ports {
		switch {
		case p < 1 || p > 65535:
			return fault.Invalid(fmt.Sprintf("ports[%d]", i), "port %d is not between 1 and 65535", p)
		case seen[p]:
			return fault.Invalid(fmt.Sprintf("ports[%d]", i), "port %d is listed twice", p)
		}
		seen[p] = true
	}
	return nil
}

// Spec is the job of sandbox in running image ("" for the default).
func Spec(in Input, image string) jobspec.Job {
	name := strings.TrimSpace(in.Name)
	if name == "" {
		name = "sandbox"
	}
	queue := in.Queue
	if strings.TrimSpace(queue) == "" {
		queue = tenancy.DefaultQueue
	}
	timeout := in.TimeoutSeconds
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ports := make([]jobspec.Port, len(in.Ports))
	for i, p := range in.Ports {
		ports[i] = jobspec.Port{Name: fmt.Sprintf("p%d", p), Port: p}
	}
	return jobspec.Job{
		Name: name, Queue: queue, Project: in.Project, Interactive: true, Sandbox: true, TimeoutSeconds: timeout,
		Services: []jobspec.Service{{
			Name: ServiceName, Image: image, Command: KeepAlive, Env: in.Env,
			CPU: in.CPU, MemoryMiB: in.MemoryMiB, GPUs: in.GPUs, GPUTypes: in.GPUTypes, Ports: ports,
		}},
	}
}

// inputError names the input's fields in the job's refusals (the
// service's cpu is the sandbox's cpu) and says why a batch-only queue
// refuses a sandbox.
func inputError(err error) error {
	fs := fault.Classify(err)
	if len(fs) == 0 {
		return err
	}
	out := make([]error, len(fs))
	for i, fe := range fs {
		out[i] = renamed(*fe)
	}
	if len(out) == 1 {
		return out[0]
	}
	return errors.Join(out...)
}

func renamed(fe fault.Error) *fault.Error {
	switch f := strings.TrimPrefix(fe.Field, "services[0]."); {
	case fe.Field == "interactive":
		fe.Field = "queue"
		fe.Message = "a sandbox is an interactive job, and " + fe.Message + ": name a queue that takes interactive jobs"
	case f == "gpus" || f == "gpuTypes":
		fe.Field = "gpu"
	case strings.HasPrefix(f, "ports"):
		fe.Field = "ports"
	case f != fe.Field:
		fe.Field = f
	case fe.Field == "services":
		fe.Field = ""
	}
	return &fe
}

// NewSnapshot, Fail and Get serve the relay's snapshots
// (relay.Snapshots): a snapshot becomes a blueprint.
func (s *Service) NewSnapshot(ctx context.Context, j *ent.Job) (*ent.Blueprint, error) {
	return s.Blueprints.NewSnapshot(ctx, j)
}

// Fail marks a snapshot's blueprint FAILED with reason.
func (s *Service) Fail(ctx context.Context, id, reason string) error {
	return s.Blueprints.Fail(ctx, id, reason)
}

// Get is a snapshot's blueprint.
func (s *Service) Get(ctx context.Context, id string) (*ent.Blueprint, error) {
	return s.Blueprints.Get(ctx, id)
}
