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
	"log/slog"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/blueprints"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/jobspec"
)

var errTODO = errors.New("not built yet")

// ServiceName is a sandbox's one service.
const ServiceName = "sandbox"

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
	TimeoutSeconds int   // 0: the queue's limit, else 3600
	Ports          []int // container ports reached through the relay
	Env            []jobspec.EnvVar
}

// Create submits the sandbox's job (interactive, kind SANDBOX).
func (s *Service) Create(ctx context.Context, in Input) (*ent.Job, error) { return nil, errTODO }
