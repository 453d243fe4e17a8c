package tenancy

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
)

// EnterTenant moves the superadmin's current token into tenant id, as a
// tenant admin there, and records it in the audit log.
func (s *Service) EnterTenant(ctx context.Context, id string) (*ent.Tenant, error) {
	v := viewer.FromContext(ctx)
	if v == nil || !v.Superadmin || v.TokenID == "" {
		return nil, fault.New(fault.Forbidden, "only superadmins enter tenants")
	}
	var t *ent.Tenant
	err := s.DB.InTx(ctx, func(tx *database.Tx) error {
		var err error
		if t, err = tx.Ent.Tenant.Get(ctx, id); err != nil {
			return err
		}
		env, err := MainEnvironmentID(ctx, tx.Ent, t.ID)
		if err != nil {
			return err
		}
		sys := viewer.SystemContext(ctx)
		if err := tx.Ent.APIToken.UpdateOneID(v.TokenID).SetTenantID(t.ID).SetEnvironmentID(env).Exec(sys); err != nil {
			return fmt.Errorf("moving token into tenant: %w", err)
		}
		return audit(sys, tx.Ent, v, t.ID, "tenant.enter", t.ID)
	})
	if err != nil {
		return nil, err
	}
	s.Log.Info("superadmin entered tenant", "user", v.UserID, "tenant", t.ID)
	return t, nil
}

// LeaveTenant takes the superadmin's current token out of its tenant.
func (s *Service) LeaveTenant(ctx context.Context) error {
	v := viewer.FromContext(ctx)
	if v == nil || !v.Superadmin || v.TokenID == "" {
		return fault.New(fault.Forbidden, "only superadmins leave tenants")
	}
	if !v.InTenant() {
		return fault.New(fault.BadUserInput, "not inside a tenant")
	}
	return s.DB.InTx(ctx, func(tx *database.Tx) error {
		sys := viewer.SystemContext(ctx)
		if err := tx.Ent.APIToken.UpdateOneID(v.TokenID).SetTenantID("").SetEnvironmentID("").Exec(sys); err != nil {
			return fmt.Errorf("taking token out of tenant: %w", err)
		}
		return audit(sys, tx.Ent, v, v.TenantID, "tenant.leave", v.TenantID)
	})
}

func audit(ctx context.Context, c *ent.Client, v *viewer.Viewer, tenantID, action, target string) error {
	_, err := c.AuditEvent.Create().SetTenantID(tenantID).SetActorID(v.UserID).
		SetAction(action).SetTarget(target).Save(ctx)
	if err != nil {
		return fmt.Errorf("writing audit event %s: %w", action, err)
	}
	return nil
}
