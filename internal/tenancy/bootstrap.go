package tenancy

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/auth"
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
// superadmin, unless a tenant exists already (then it returns nil).
func (s *Service) Bootstrap(ctx context.Context, seed Seed, tokens *auth.Service) (*Seeded, error) {
	sys := viewer.SystemContext(ctx)
	n, err := s.DB.Ent.Tenant.Query().Count(sys)
	if err != nil {
		return nil, fmt.Errorf("checking for tenants: %w", err)
	}
	if n > 0 {
		return nil, nil
	}
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

	t, admin, err := s.CreateTenant(sys, NewTenant{
		Name: seed.TenantName, Slug: seed.TenantSlug, BudgetPolicy: "STOP",
		AdminEmail: seed.AdminEmail, AdminName: "Admin", AdminPassword: seed.AdminPassword,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the first tenant: %w", err)
	}
	env, err := MainEnvironmentID(ctx, s.DB.Ent, t.ID)
	if err != nil {
		return nil, err
	}
	token, err := tokens.IssueToken(ctx, admin, "bootstrap", env, seed.AdminToken)
	if err != nil {
		return nil, fmt.Errorf("issuing the admin token: %w", err)
	}
	hash, err := auth.HashPassword(seed.SuperadminPassword)
	if err != nil {
		return nil, fmt.Errorf("superadmin password: %w", err)
	}
	if _, err := s.DB.Ent.User.Create().SetEmail(auth.NormalizeEmail(seed.SuperadminEmail)).
		SetName("Superadmin").SetPasswordHash(hash).SetSuperadmin(true).Save(sys); err != nil {
		return nil, fmt.Errorf("creating the superadmin: %w", err)
	}
	return &Seeded{
		Tenant: t, AdminEmail: admin.Email, AdminPassword: seed.AdminPassword, AdminToken: token,
		SuperadminEmail: seed.SuperadminEmail, SuperadminPassword: seed.SuperadminPassword,
	}, nil
}

func generatedPassword() string {
	secret, _ := auth.NewSecret()
	return secret[4:24]
}
