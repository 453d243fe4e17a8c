package tenancy

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/apitoken"
	"github.com/levers9/levers9/internal/audit"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
)

// EnterTenant moves the superadmin's current token into tenant id, as a
// tenant admin there, and records it in the audit log. From then on every
// change the superadmin makes is audited too (audit.Hook), and tokens they
// make are marked entered, to be revoked when they leave.
func (s *Service) EnterTenant(ctx context.Context, id string) (*ent.Tenant, error) {
	v := viewer.FromContext(ctx)
	if v == nil || !v.Superadmin || v.TokenID == "" {
		return nil, fault.New(fault.Forbidden, "only superadmins enter tenants")
	}
	var t *ent.Tenant
	err := s.DB.InTx(ctx, func(tx *database.Tx) error {
		sys := viewer.SystemContext(ctx)
		cur, err := tx.Ent.APIToken.Get(sys, v.TokenID)
		if err != nil {
			return fmt.Errorf("reading the current token: %w", err)
		}
		if cur.Entered {
			// It would escape the revocation that leaving its tenant brings.
			return fault.New(fault.Forbidden, "a token made inside a tenant stays there: enter with a token made outside")
		}
		if t, err = tx.Ent.Tenant.Get(ctx, id); err != nil {
			return err
		}
		env, err := MainEnvironmentID(ctx, tx.Ent, t.ID)
		if err != nil {
			return err
		}
		if err := tx.Ent.APIToken.UpdateOneID(v.TokenID).SetTenantID(t.ID).SetEnvironmentID(env).Exec(sys); err != nil {
			return fmt.Errorf("moving token into tenant: %w", err)
		}
		return audit.Record(sys, tx.Ent, t.ID, v.UserID, "tenant.enter", t.ID, nil)
	})
	if err != nil {
		return nil, err
	}
	// Streams opened with the token before it moved are of another tenant.
	s.tokensEnded(ctx, v.TokenID)
	s.Log.Info("superadmin entered tenant", "user", v.UserID, "tenant", t.ID)
	return t, nil
}

// LeaveTenant takes the superadmin's current token out of its tenant and
// revokes every token the superadmin made while inside it (marked entered),
// so nothing made inside outlives the visit; the streams of all of them end.
func (s *Service) LeaveTenant(ctx context.Context) error {
	v := viewer.FromContext(ctx)
	if v == nil || !v.Superadmin || v.TokenID == "" {
		return fault.New(fault.Forbidden, "only superadmins leave tenants")
	}
	if !v.InTenant() {
		return fault.New(fault.BadUserInput, "not inside a tenant")
	}
	var revoked []string
	err := s.DB.InTx(ctx, func(tx *database.Tx) error {
		sys := viewer.SystemContext(ctx)
		if err := tx.Ent.APIToken.UpdateOneID(v.TokenID).SetTenantID("").SetEnvironmentID("").Exec(sys); err != nil {
			return fmt.Errorf("taking token out of tenant: %w", err)
		}
		mine := apitoken.And(apitoken.UserID(v.UserID), apitoken.TenantID(v.TenantID),
			apitoken.Entered(true), apitoken.RevokedAtIsNil())
		var err error
		if revoked, err = tx.Ent.APIToken.Query().Where(mine).IDs(sys); err != nil {
			return fmt.Errorf("finding the tokens made inside the tenant: %w", err)
		}
		if len(revoked) > 0 {
			if err := tx.Ent.APIToken.Update().Where(apitoken.IDIn(revoked...)).SetRevokedAt(s.now()).Exec(sys); err != nil {
				return fmt.Errorf("revoking the tokens made inside the tenant: %w", err)
			}
		}
		var details map[string]string
		if len(revoked) > 0 {
			details = map[string]string{"revoked_tokens": strings.Join(revoked, ",")}
		}
		return audit.Record(sys, tx.Ent, v.TenantID, v.UserID, "tenant.leave", v.TenantID, details)
	})
	if err != nil {
		return err
	}
	s.tokensEnded(ctx, append(revoked, v.TokenID)...)
	s.Log.Info("superadmin left tenant", "user", v.UserID, "tenant", v.TenantID, "revoked_tokens", len(revoked))
	return nil
}

// now is the clock tokens are checked by.
func (s *Service) now() time.Time {
	if s.Auth != nil {
		return s.Auth.Now()
	}
	return time.Now()
}

// tokensEnded ends the open streams of tokens ids (see auth.Hold).
func (s *Service) tokensEnded(ctx context.Context, ids ...string) {
	if s.Auth != nil {
		s.Auth.TokensEnded(ctx, ids...)
	}
}
