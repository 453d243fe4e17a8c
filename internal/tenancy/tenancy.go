// Package tenancy creates tenants and their users, and lets superadmins
// enter and leave tenants (audited).
package tenancy

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/environment"
	"github.com/levers9/levers9/ent/group"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/ent/user"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
)

// Names of what every tenant starts with.
const (
	MainEnvironment = "main"
	EveryoneGroup   = "everyone"
	DefaultQueue    = "default"
	LocalStorage    = "local"
)

// Service manages tenants and users.
type Service struct {
	DB  *database.DB
	Log *slog.Logger
	// LocalStorageRoot, when set, gives every new tenant a "local" storage
	// in a directory under it (the server's own disk).
	LocalStorageRoot string
	// Auth, when set, ends the open streams of tokens that enterTenant and
	// leaveTenant move or revoke (the server always sets it).
	Auth *auth.Service
}

// NewTenant describes a tenant to create with its first admin.
type NewTenant struct {
	Name           string
	Slug           string
	EmailDomains   []string
	RequireProject bool
	BudgetPolicy   tenant.BudgetPolicy
	AdminEmail     string
	AdminName      string
	AdminPassword  string
}

var (
	slugRe   = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	domainRe = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	emailRe  = regexp.MustCompile(`^[^@\s]{1,64}@[^@\s]{1,253}$`)
)

// CreateTenant creates a tenant with its main environment, the group
// everyone, a default queue, a local storage (when configured) and its
// first admin. Superadmins only.
func (s *Service) CreateTenant(ctx context.Context, in NewTenant) (*ent.Tenant, *ent.User, error) {
	if v := viewer.FromContext(ctx); v == nil || !(v.Superadmin || v.System) {
		return nil, nil, fault.New(fault.Forbidden, "only superadmins create tenants")
	}
	var (
		t     *ent.Tenant
		admin *ent.User
	)
	err := s.DB.InTx(ctx, func(tx *database.Tx) error {
		var err error
		t, admin, err = s.createTenant(ctx, tx.Ent, in)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	s.Log.Info("created tenant", "tenant", t.ID, "slug", t.Slug, "admin", admin.Email)
	return t, admin, nil
}

// createTenant checks in and creates the tenant through c, which is inside a
// transaction.
func (s *Service) createTenant(ctx context.Context, c *ent.Client, in NewTenant) (*ent.Tenant, *ent.User, error) {
	in.AdminEmail = auth.NormalizeEmail(in.AdminEmail)
	for i, d := range in.EmailDomains {
		in.EmailDomains[i] = strings.ToLower(strings.TrimSpace(d))
	}
	if len(in.EmailDomains) == 0 {
		if _, d, ok := strings.Cut(in.AdminEmail, "@"); ok {
			in.EmailDomains = []string{d}
		}
	}
	if err := validateTenant(in); err != nil {
		return nil, nil, err
	}
	hash, err := auth.HashPassword(in.AdminPassword)
	if err != nil {
		return nil, nil, fault.Invalid("adminPassword", "%v", err)
	}
	sys := viewer.SystemContext(ctx)
	if err := domainsFree(sys, c, in.EmailDomains, ""); err != nil {
		return nil, nil, err
	}
	if n, err := c.Tenant.Query().Where(tenant.Slug(in.Slug)).Count(sys); err != nil || n > 0 {
		if err != nil {
			return nil, nil, fmt.Errorf("checking slug: %w", err)
		}
		return nil, nil, fault.Invalid("slug", "a tenant with slug %q already exists", in.Slug)
	}
	if n, err := c.User.Query().Where(user.Email(in.AdminEmail)).Count(sys); err != nil || n > 0 {
		if err != nil {
			return nil, nil, fmt.Errorf("checking email: %w", err)
		}
		return nil, nil, fault.Invalid("adminEmail", "a user with email %s already exists", in.AdminEmail)
	}
	t, err := c.Tenant.Create().
		SetName(in.Name).SetSlug(in.Slug).SetEmailDomains(in.EmailDomains).
		SetRequireProject(in.RequireProject).SetBudgetPolicy(in.BudgetPolicy).
		Save(sys)
	if err != nil {
		return nil, nil, fmt.Errorf("creating tenant: %w", err)
	}
	if err := s.furnish(sys, c, t); err != nil {
		return nil, nil, err
	}
	admin, err := createUser(sys, c, t.ID, in.AdminEmail, in.AdminName, hash, user.RoleAdmin)
	if err != nil {
		return nil, nil, err
	}
	return t, admin, nil
}

func validateTenant(in NewTenant) error {
	switch {
	case strings.TrimSpace(in.Name) == "" || len(in.Name) > 200:
		return fault.Invalid("name", "a tenant needs a name of at most 200 characters")
	case !slugRe.MatchString(in.Slug):
		return fault.Invalid("slug", "%q is not a valid slug: lower-case letters, digits and '-'", in.Slug)
	case !emailRe.MatchString(in.AdminEmail):
		return fault.Invalid("adminEmail", "%q is not an email address", in.AdminEmail)
	case tenant.BudgetPolicyValidator(in.BudgetPolicy) != nil:
		return fault.Invalid("budgetPolicy", "must be STOP or FINISH")
	}
	for _, d := range in.EmailDomains {
		if !domainRe.MatchString(d) {
			return fault.Invalid("emailDomains", "%q is not a domain name", d)
		}
	}
	_, d, _ := strings.Cut(in.AdminEmail, "@")
	if !slices.Contains(in.EmailDomains, d) {
		return fault.Invalid("adminEmail", "the admin's domain %s is not one of the tenant's email domains", d)
	}
	return nil
}

// UpdateTenant changes the settings of the viewer's tenant. Its email
// domains must stay its own: a domain another tenant owns cannot be claimed.
func (s *Service) UpdateTenant(ctx context.Context, in ent.UpdateTenantInput) (*ent.Tenant, error) {
	v := viewer.FromContext(ctx)
	if !v.InTenant() {
		return nil, fault.New(fault.Forbidden, "not inside a tenant")
	}
	for _, ds := range [][]string{in.EmailDomains, in.AppendEmailDomains} {
		for i, d := range ds {
			ds[i] = strings.ToLower(strings.TrimSpace(d))
			if !domainRe.MatchString(ds[i]) {
				return nil, fault.Invalid("emailDomains", "%q is not a domain name", d)
			}
		}
	}
	var t *ent.Tenant
	err := s.DB.InTx(ctx, func(tx *database.Tx) error {
		claimed := append(slices.Clone(in.EmailDomains), in.AppendEmailDomains...)
		if err := domainsFree(viewer.SystemContext(ctx), tx.Ent, claimed, v.TenantID); err != nil {
			return err
		}
		var err error
		t, err = tx.Ent.Tenant.UpdateOneID(v.TenantID).SetInput(in).Save(ctx)
		return err
	})
	return t, err
}

// domainsFree checks that no tenant other than except owns one of domains:
// the domain of an email decides the tenant a user signs in to.
func domainsFree(ctx context.Context, c *ent.Client, domains []string, except string) error {
	all, err := c.Tenant.Query().Where(tenant.IDNEQ(except)).Select(tenant.FieldEmailDomains).All(ctx)
	if err != nil {
		return fmt.Errorf("listing tenant domains: %w", err)
	}
	for _, t := range all {
		for _, d := range domains {
			if slices.Contains(t.EmailDomains, d) {
				return fault.Invalid("emailDomains", "domain %s already belongs to another tenant", d)
			}
		}
	}
	return nil
}

// furnish creates what a new tenant starts with.
func (s *Service) furnish(ctx context.Context, c *ent.Client, t *ent.Tenant) error {
	if _, err := c.Environment.Create().SetTenantID(t.ID).SetName(MainEnvironment).Save(ctx); err != nil {
		return fmt.Errorf("creating main environment: %w", err)
	}
	everyone, err := c.Group.Create().SetTenantID(t.ID).SetName(EveryoneGroup).
		SetDescription("every user of the tenant").Save(ctx)
	if err != nil {
		return fmt.Errorf("creating group everyone: %w", err)
	}
	q := c.Queue.Create().SetTenantID(t.ID).SetName(DefaultQueue).
		SetDescription("the queue every user may use").AddGroups(everyone)
	if s.LocalStorageRoot != "" {
		st, err := c.Storage.Create().SetTenantID(t.ID).SetName(LocalStorage).SetKind(storage.KindLocal).
			SetPath(filepath.Join(s.LocalStorageRoot, t.Slug)).Save(ctx)
		if err != nil {
			return fmt.Errorf("creating local storage: %w", err)
		}
		q.AddStorages(st)
	}
	if _, err := q.Save(ctx); err != nil {
		return fmt.Errorf("creating default queue: %w", err)
	}
	return nil
}

func createUser(ctx context.Context, c *ent.Client, tenantID, email, name, hash string, role user.Role) (*ent.User, error) {
	u, err := c.User.Create().SetTenantID(tenantID).SetEmail(email).SetName(name).
		SetPasswordHash(hash).SetRole(role).Save(ctx)
	if err != nil {
		return nil, fmt.Errorf("creating user %s: %w", email, err)
	}
	everyone, err := c.Group.Query().Where(group.TenantID(tenantID), group.Name(EveryoneGroup)).Only(ctx)
	if err != nil {
		return nil, fmt.Errorf("finding group everyone: %w", err)
	}
	if _, err := c.Membership.Create().SetTenantID(tenantID).SetUser(u).SetGroup(everyone).Save(ctx); err != nil {
		return nil, fmt.Errorf("adding %s to everyone: %w", email, err)
	}
	return u, nil
}

// MainEnvironmentID returns the ID of a tenant's main environment.
func MainEnvironmentID(ctx context.Context, c *ent.Client, tenantID string) (string, error) {
	env, err := c.Environment.Query().
		Where(environment.TenantID(tenantID), environment.Name(MainEnvironment)).
		Only(viewer.SystemContext(ctx))
	if err != nil {
		return "", fmt.Errorf("finding main environment of %s: %w", tenantID, err)
	}
	return env.ID, nil
}
