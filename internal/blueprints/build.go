package blueprints

import (
	"context"
	"errors"
	"fmt"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/blueprint"
	"github.com/levers9/levers9/internal/blobs"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/ids"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// BuildInput is a blueprint to build.
type BuildInput struct {
	Steps     []wire.BuildStep // without keys
	Queue     string           // where the build job runs; "" the tenant's default
	Project   string
	CPU       float64 // the build job's; 0: 2 cores
	MemoryMiB int64   // 0: 4096
}

// Defaults of a build job.
const (
	BuildCPU       = 2
	BuildMemoryMiB = 4096
	BuildTimeout   = 3600 // seconds
	// BuildCommand is the build service's command: the agent builds
	// instead of running it, the job's log shows it.
	BuildCommand = "levers9-build"
	// BuildService is the build job's one service.
	BuildService = "build"
)

// Build returns the viewer's tenant's blueprint for in.Steps: the one
// already READY or BUILDING with the same key, else a new BUILDING one
// with its build job. A FAILED one is built again.
//
// The build job is submitted (its own transaction, jobs.Submit's) before
// the blueprint row is written or turned back to BUILDING, so no row ever
// waits for a job that does not exist; when another build of the same
// key won in between, the job submitted here is cancelled and the
// winner returned.
func (s *Service) Build(ctx context.Context, in BuildInput) (*ent.Blueprint, error) {
	v := viewer.FromContext(ctx)
	if !v.InTenant() || v.UserID == "" {
		return nil, fault.New(fault.Forbidden, "build blueprints from inside a tenant")
	}
	steps, err := Keys(in.Steps)
	if err != nil {
		return nil, err
	}
	key := steps[len(steps)-1].Key
	existing, err := s.byKey(ctx, v.TenantID, key)
	if err != nil {
		return nil, err
	}
	if existing != nil {
		if existing, err = s.settle(ctx, existing); err != nil {
			return nil, err
		}
		if existing.State != blueprint.StateFAILED {
			return existing, nil
		}
	}
	if err := s.checkCode(ctx, steps); err != nil {
		return nil, err
	}
	id := ids.New("bp")
	if existing != nil {
		id = existing.ID
	}
	build := &wire.Build{Blueprint: id, Repository: Repository(v.TenantID), Steps: steps}
	if build.Cached, build.CachedStep, err = s.cachedPrefix(ctx, v.TenantID, steps); err != nil {
		return nil, err
	}
	j, err := s.Jobs.Submit(ctx, buildJob(in, build))
	if err != nil {
		return nil, err
	}
	bp, err := s.record(ctx, v, existing, id, steps, j)
	if err != nil {
		// Nothing waits for this job: end it (it has not run yet), even
		// when the request that submitted it is gone.
		if _, cerr := s.Jobs.Cancel(context.WithoutCancel(ctx), j.ID); cerr != nil {
			s.Log.Warn("cancelling an unneeded build job", "job", j.ID, "err", cerr)
		}
		var lost *lostRace
		if errors.As(err, &lost) {
			return s.byKey(ctx, v.TenantID, key)
		}
		return nil, err
	}
	s.Log.Info("blueprint building", "blueprint", bp.ID, "key", key, "job", j.ID, "cached", build.Cached, "cachedStep", build.CachedStep)
	return bp, nil
}

// lostRace is another build of the same key having recorded it first.
type lostRace struct{}

func (*lostRace) Error() string { return "another build of this blueprint started first" }

// record writes the blueprint of steps with build job j: a new row, or
// existing (FAILED) turned back to BUILDING.
func (s *Service) record(ctx context.Context, v *viewer.Viewer, existing *ent.Blueprint, id string, steps []wire.BuildStep, j *ent.Job) (*ent.Blueprint, error) {
	sys := viewer.SystemContext(ctx)
	key := steps[len(steps)-1].Key
	if existing == nil {
		bp, err := s.DB.Ent.Blueprint.Create().SetID(id).SetTenantID(v.TenantID).SetKey(key).SetFirstKey(steps[0].Key).
			SetSteps(steps).SetImage(Repository(v.TenantID) + ":" + key).SetOwnerID(v.UserID).
			SetBuildJobID(j.ID).Save(ctx)
		if ent.IsConstraintError(err) {
			return nil, &lostRace{}
		}
		if err != nil {
			return nil, fmt.Errorf("recording blueprint %s: %w", key, err)
		}
		return bp, nil
	}
	// Any member may build again a blueprint that failed, whoever first
	// asked for it: the update is the system's, scoped to the tenant.
	n, err := s.DB.Ent.Blueprint.Update().
		Where(blueprint.ID(existing.ID), blueprint.TenantID(v.TenantID), blueprint.StateEQ(blueprint.StateFAILED)).
		SetState(blueprint.StateBUILDING).SetFailure("").SetBuildJobID(j.ID).SetStepsBuilt(0).
		Save(sys)
	if err != nil {
		return nil, fmt.Errorf("building blueprint %s again: %w", existing.ID, err)
	}
	if n == 0 {
		return nil, &lostRace{}
	}
	return s.DB.Ent.Blueprint.Get(ctx, existing.ID)
}

// buildJob is the job that builds b: one service running the final image,
// so that placement needs a container node and prefers one that has it.
func buildJob(in BuildInput, b *wire.Build) jobspec.Job {
	cpu, mem := in.CPU, in.MemoryMiB
	if cpu == 0 {
		cpu = BuildCPU
	}
	if mem == 0 {
		mem = BuildMemoryMiB
	}
	q := in.Queue
	if q == "" {
		q = tenancy.DefaultQueue
	}
	key := b.Steps[len(b.Steps)-1].Key
	return jobspec.Job{
		Name: "build " + key[:12], Queue: q, Project: in.Project,
		Services: []jobspec.Service{{
			Name: BuildService, Image: b.Image(len(b.Steps) - 1), Command: []string{BuildCommand},
			CPU: cpu, MemoryMiB: mem,
		}},
		Build:          b,
		TimeoutSeconds: BuildTimeout,
	}
}

// checkCode refuses COPY steps whose zip the viewer's tenant has not
// uploaded as a code blob: the node could not fetch it.
func (s *Service) checkCode(ctx context.Context, steps []wire.BuildStep) error {
	for i, st := range steps {
		if st.Kind != wire.StepCopy {
			continue
		}
		b, err := s.Blobs.Lookup(ctx, st.Code)
		if err != nil && !isNotFound(err) {
			return err
		}
		if b == nil || b.Kind != blobs.KindCode {
			return fault.Invalid(fmt.Sprintf("steps[%d].code", i), "no code blob %s: upload the zip first (kind code)", st.Code)
		}
	}
	return nil
}

func isNotFound(err error) bool {
	for _, f := range fault.Classify(err) {
		if f.Code == fault.NotFound {
			return true
		}
	}
	return false
}

// cachedPrefix finds the deepest of steps' keys that a READY blueprint
// of the tenant (with the same first step) has among its own steps: its
// export holds that step's image, so the build starts after it. It
// returns "" when none has even the first step.
func (s *Service) cachedPrefix(ctx context.Context, tenantID string, steps []wire.BuildStep) (string, int, error) {
	sys := viewer.SystemContext(ctx)
	cands, err := s.DB.Ent.Blueprint.Query().
		Where(blueprint.TenantID(tenantID), blueprint.FirstKey(steps[0].Key), blueprint.StateEQ(blueprint.StateREADY),
			blueprint.SourceEQ(blueprint.SourceBUILD), blueprint.ExportBlobNEQ("")).
		Order(ent.Desc(blueprint.FieldReadyAt)).Limit(maxCandidates).All(sys)
	if err != nil {
		return "", 0, fmt.Errorf("looking for cached steps: %w", err)
	}
	cached, depth := "", -1
	for _, c := range cands {
		// Keys chain: the same key at step i means the same steps 0..i.
		for i := min(len(c.Steps), len(steps)) - 1; i > depth; i-- {
			if c.Steps[i].Key == steps[i].Key {
				cached, depth = c.Key, i
				break
			}
		}
	}
	if depth < 0 {
		return "", 0, nil
	}
	return cached, depth, nil
}

// maxCandidates bounds the READY blueprints a build compares its steps
// with (the latest ones).
const maxCandidates = 200

// byKey is tenantID's blueprint key, nil when there is none.
func (s *Service) byKey(ctx context.Context, tenantID, key string) (*ent.Blueprint, error) {
	bp, err := s.DB.Ent.Blueprint.Query().Where(blueprint.TenantID(tenantID), blueprint.Key(key)).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("looking up blueprint %s: %w", key, err)
	}
	return bp, nil
}
