package tenancy

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/viewer"
)

// Seed is what the first start creates. Empty values get defaults; empty
// passwords are generated and reported back once.
type Seed struct {
	TenantName         string
	TenantSlug         string
	AdminEmail         string
	AdminPassword      string
	AdminToken         string // a preset API token secret, for scripted set-ups
	SuperadminEmail    string
	SuperadminPassword string
}

// Seeded reports what Bootstrap created, secrets included: print them once.
type Seeded struct {
	Tenant             *ent.Tenant
	AdminEmail         string
	AdminPassword      string
	AdminToken         string
	SuperadminEmail    string
	SuperadminPassword string
}

// Bootstrap creates the first tenant, its admin with an API token and a
// superadmin, unless a tenant exists already (then it returns nil). It
// creates all of it or nothing, so a failed first start can simply be
// repeated and never leaves an admin whose password was not shown.
func (s *Service) Bootstrap(ctx context.Context, seed Seed) (*Seeded, error) {
	def := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	def(&seed.TenantName, "Default")
	def(&seed.TenantSlug, "default")
	def(&seed.AdminEmail, "admin@levers9.local")
	def(&seed.AdminPassword, generatedPassword())
	def(&seed.SuperadminEmail, "superadmin@levers9.local")
	def(&seed.SuperadminPassword, generatedPassword())
	if seed.AdminToken != "" {
		if err := auth.CheckPresetToken(seed.AdminToken); err != nil {
			return nil, fmt.Errorf("LEVERS9_ADMIN_TOKEN: %w", err)
		}
	}
	superHash, err := auth.HashPassword(seed.SuperadminPassword)
	if err != nil {
		return nil, fmt.Errorf("superadmin password: %w", err)
	}
	sys := viewer.SystemContext(ctx)
	var out *Seeded
	err = s.DB.InTx(ctx, func(tx *database.Tx) error {
		n, err := tx.Ent.Tenant.Query().Count(sys)
		if err != nil || n > 0 {
			return err
		}
		t, admin, err := s.createTenant(sys, tx.Ent, NewTenant{
			Name: seed.TenantName, Slug: seed.TenantSlug, BudgetPolicy: "STOP",
			AdminEmail: seed.AdminEmail, AdminName: "Admin", AdminPassword: seed.AdminPassword,
		})
		if err != nil {
			return fmt.Errorf("creating the first tenant: %w", err)
		}
		env, err := MainEnvironmentID(ctx, tx.Ent, t.ID)
		if err != nil {
			return err
		}
		token, err := auth.IssueToken(ctx, tx.Ent, admin, "bootstrap", env, seed.AdminToken)
		if err != nil {
			return fmt.Errorf("issuing the admin token: %w", err)
		}
		if _, err := tx.Ent.User.Create().SetEmail(auth.NormalizeEmail(seed.SuperadminEmail)).
			SetName("Superadmin").SetPasswordHash(superHash).SetSuperadmin(true).Save(sys); err != nil {
			return fmt.Errorf("creating the superadmin: %w", err)
		}
		out = &Seeded{
			Tenant: t, AdminEmail: admin.Email, AdminPassword: seed.AdminPassword, AdminToken: token,
			SuperadminEmail: seed.SuperadminEmail, SuperadminPassword: seed.SuperadminPassword,
		}
		return nil
	})
	return out, err
}

func generatedPassword() string {
	secret, _ := auth.NewSecret()
	return secret[4:24]
}
