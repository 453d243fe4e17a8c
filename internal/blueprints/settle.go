package blueprints

import (
	"context"
	"errors"
	"fmt"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/blueprint"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/viewer"
)

// ReasonNoImage is the failure of a build whose job completed without
// uploading its image.
const ReasonNoImage = "the build ended without an image"

// Get is blueprint id, first settling it when its build job ended
// without an image (FAILED with the job's reason).
func (s *Service) Get(ctx context.Context, id string) (*ent.Blueprint, error) {
	bp, err := s.DB.Ent.Blueprint.Get(ctx, id)
	if ent.IsNotFound(err) {
		return nil, fault.Missing(fmt.Sprintf("blueprint %q", id))
	}
	if err != nil {
		return nil, fmt.Errorf("loading blueprint %s: %w", id, err)
	}
	return s.settle(ctx, bp)
}

// Ready is blueprint id when it is READY, for a function, sandbox or box
// to run: a fault.Invalid on field otherwise (building, failed, unknown).
func (s *Service) Ready(ctx context.Context, field, id string) (*ent.Blueprint, error) {
	bp, err := s.Get(ctx, id)
	if err != nil {
		if isNotFound(err) {
			return nil, fault.Invalid(field, "blueprint %q not found", id)
		}
		return nil, err
	}
	switch bp.State {
	case blueprint.StateREADY:
		return bp, nil
	case blueprint.StateBUILDING:
		return nil, fault.Invalid(field, "blueprint %s is still building: wait until it is READY", bp.ID)
	default:
		return nil, fault.Invalid(field, "blueprint %s failed: %s", bp.ID, bp.Failure)
	}
}

// Fail marks a BUILDING blueprint FAILED with reason. Inside a tenant it
// touches only that tenant's blueprints.
func (s *Service) Fail(ctx context.Context, id, reason string) error {
	u := s.DB.Ent.Blueprint.Update().Where(blueprint.ID(id), blueprint.StateEQ(blueprint.StateBUILDING))
	if v := viewer.FromContext(ctx); v.InTenant() {
		u.Where(blueprint.TenantID(v.TenantID))
	}
	if _, err := u.SetState(blueprint.StateFAILED).SetFailure(clip(reason)).Save(viewer.SystemContext(ctx)); err != nil {
		return fmt.Errorf("marking blueprint %s failed: %w", id, err)
	}
	return nil
}

// Settle marks FAILED every BUILDING blueprint whose build job ended
// without its image (the safety net behind Get): two queries, whatever
// the number of builds under way. One that cannot be marked does not
// stop the others.
func (s *Service) Settle(ctx context.Context) error {
	sys := viewer.SystemContext(ctx)
	building, err := s.DB.Ent.Blueprint.Query().Where(blueprint.StateEQ(blueprint.StateBUILDING), blueprint.BuildJobIDNEQ("")).All(sys)
	if err != nil {
		return fmt.Errorf("listing building blueprints: %w", err)
	}
	if len(building) == 0 {
		return nil
	}
	ids := make([]string, 0, len(building))
	for _, bp := range building {
		ids = append(ids, bp.BuildJobID)
	}
	js, err := s.DB.Ent.Job.Query().Where(job.IDIn(ids...)).Select(job.FieldID, job.FieldStatus, job.FieldStatusReason).All(sys)
	if err != nil {
		return fmt.Errorf("loading the build jobs of %d blueprints: %w", len(building), err)
	}
	byID := make(map[string]*ent.Job, len(js))
	for _, j := range js {
		byID[j.ID] = j
	}
	var errs []error
	for _, bp := range building {
		reason, ended := endReason(byID[bp.BuildJobID])
		if !ended {
			continue
		}
		if _, err := s.failNow(sys, bp, reason); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// endReason is why a blueprint whose build job is j (nil: gone) failed,
// and whether that job has ended.
func endReason(j *ent.Job) (string, bool) {
	switch {
	case j == nil:
		return "the build job is gone", true
	case !jobs.Ended(j.Status):
		return "", false
	case j.Status == job.StatusComplete || j.StatusReason == "":
		return ReasonNoImage, true
	default:
		return j.StatusReason, true
	}
}

// settle fails bp when it is BUILDING and its build job has ended: the
// node uploads the image before the job ends, so an ended job without
// one never will. It returns bp as it now is.
func (s *Service) settle(ctx context.Context, bp *ent.Blueprint) (*ent.Blueprint, error) {
	if bp.State != blueprint.StateBUILDING || bp.BuildJobID == "" {
		return bp, nil
	}
	sys := viewer.SystemContext(ctx)
	j, err := s.DB.Ent.Job.Get(sys, bp.BuildJobID)
	if ent.IsNotFound(err) {
		j, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("loading build job %s of blueprint %s: %w", bp.BuildJobID, bp.ID, err)
	}
	reason, ended := endReason(j)
	if !ended {
		return bp, nil
	}
	return s.failNow(sys, bp, reason)
}

// failNow marks bp FAILED unless the image arrived meanwhile, and
// returns it as it is now.
func (s *Service) failNow(sys context.Context, bp *ent.Blueprint, reason string) (*ent.Blueprint, error) {
	_, err := s.DB.Ent.Blueprint.Update().
		Where(blueprint.ID(bp.ID), blueprint.StateEQ(blueprint.StateBUILDING), blueprint.BuildJobID(bp.BuildJobID)).
		SetState(blueprint.StateFAILED).SetFailure(clip(reason)).Save(sys)
	if err != nil {
		return nil, fmt.Errorf("marking blueprint %s failed: %w", bp.ID, err)
	}
	s.Log.Info("blueprint failed", "blueprint", bp.ID, "job", bp.BuildJobID, "reason", reason)
	got, err := s.DB.Ent.Blueprint.Get(sys, bp.ID)
	if err != nil {
		return nil, fmt.Errorf("loading blueprint %s: %w", bp.ID, err)
	}
	return got, nil
}

// clip bounds a failure reason kept on the row.
func clip(s string) string {
	const n = 1000
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
