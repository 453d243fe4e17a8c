// Package blueprints keeps what is installed in containers: steps declared
// in code, each keyed by the hash of the previous key and the step, built
// once per tenant and key by a build job on a Docker node, exported to
// blob storage so that any node can load it, and reused by every function,
// sandbox and box that names it.
package blueprints

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/blobs"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/wire"
)

var errTODO = errors.New("not built yet")

// RepositoryPrefix starts the image repository of every tenant's
// blueprints; no user's job spec may name an image under it.
const RepositoryPrefix = "levers9-bp/"

// Repository is the image repository of tenantID's blueprints.
func Repository(tenantID string) string { return RepositoryPrefix + tenantID }

// Reserved reports whether image is a blueprint's image, which only the
// blueprints layer may put into a job (so a tenant cannot run another's).
func Reserved(image string) bool { panic("TODO") }

// Keys validates steps and returns them with each Key set: the hex
// SHA-256 of the previous step's key and the step's canonical JSON.
// A bad step is a fault.Invalid naming it ("steps[2].packages").
func Keys(steps []wire.BuildStep) ([]wire.BuildStep, error) { return nil, errTODO }

// Service builds and finds blueprints.
type Service struct {
	DB    *database.DB
	Jobs  *jobs.Service // submits build jobs
	Blobs *blobs.Store  // keeps exported images (kind blobs.KindImage)
	Log   *slog.Logger
	Now   func() time.Time
}

// BuildInput is a blueprint to build.
type BuildInput struct {
	Steps     []wire.BuildStep // without keys
	Queue     string           // where the build job runs; "" the tenant's default
	Project   string
	CPU       float64 // the build job's; 0: 2 cores
	MemoryMiB int64   // 0: 4096
}

// Build returns the viewer's tenant's blueprint for in.Steps: the one
// already READY or BUILDING with the same key, else a new BUILDING one
// whose build job is submitted in the same transaction. A FAILED one is
// built again.
func (s *Service) Build(ctx context.Context, in BuildInput) (*ent.Blueprint, error) {
	return nil, errTODO
}

// Get is blueprint id, first settling it when its build job ended
// without an image (FAILED with the job's reason).
func (s *Service) Get(ctx context.Context, id string) (*ent.Blueprint, error) { return nil, errTODO }

// Ready is blueprint id when it is READY, for a function, sandbox or box
// to run: a fault.Invalid on field otherwise (building, failed, unknown).
func (s *Service) Ready(ctx context.Context, field, id string) (*ent.Blueprint, error) {
	return nil, errTODO
}

// NewSnapshot records a BUILDING blueprint of source SNAPSHOT for the
// sandbox job j; the node commits to its Image and uploads it
// (StoreImage).
func (s *Service) NewSnapshot(ctx context.Context, j *ent.Job) (*ent.Blueprint, error) {
	return nil, errTODO
}

// Fail marks a BUILDING blueprint FAILED with reason.
func (s *Service) Fail(ctx context.Context, id, reason string) error { return errTODO }

// StoreImage takes the export of blueprint key uploaded by the node with
// credential for job jobID: only that blueprint's build job (or the
// sandbox of a snapshot) on that node may. The blueprint becomes READY
// with the node as a holder.
func (s *Service) StoreImage(ctx context.Context, credential, jobID, key string, stepsBuilt int, r io.Reader, size int64, sha256hex string) error {
	return errTODO
}

// OpenImage opens the export of blueprint key for the node with
// credential, which needs it for job jobID (a service of the job runs the
// image, or the build's Cached names it), and records the node as a
// holder.
func (s *Service) OpenImage(ctx context.Context, credential, jobID, key string) (io.ReadCloser, int64, error) {
	return nil, 0, errTODO
}

// Holders maps each of images (blueprint images; others are ignored) to
// the nodes known to hold it, for placement.
func (s *Service) Holders(ctx context.Context, images []string) (map[string][]string, error) {
	return nil, errTODO
}

// Settle marks FAILED every BUILDING blueprint whose build job ended
// without its image (the safety net behind Get).
func (s *Service) Settle(ctx context.Context) error { return errTODO }
