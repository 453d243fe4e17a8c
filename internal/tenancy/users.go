package tenancy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/levers9/levers9/ent/membership"
	"github.com/levers9/levers9/ent/user"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"

	"github.com/levers9/levers9/ent"
)

// NewUser describes a user a tenant admin adds.
type NewUser struct {
	Email    string
	Name     string
	Password string
	Role     user.Role
}

// CreateUser adds a user to the viewer's tenant and to its group everyone.
// The email's domain must be one of the tenant's: that is how sign-in finds
// the tenant.
func (s *Service) CreateUser(ctx context.Context, in NewUser) (*ent.User, error) {
	v := viewer.FromContext(ctx)
	if !v.InTenant() || !v.Admin {
		return nil, fault.New(fault.Forbidden, "only tenant admins add users")
	}
	in.Email = auth.NormalizeEmail(in.Email)
	if !emailRe.MatchString(in.Email) {
		return nil, fault.Invalid("email", "%q is not an email address", in.Email)
	}
	if in.Role == "" {
		in.Role = user.RoleMember
	}
	if user.RoleValidator(in.Role) != nil {
		return nil, fault.Invalid("role", "must be MEMBER or ADMIN")
	}
	if len(in.Name) > 200 {
		return nil, fault.Invalid("name", "at most 200 characters")
	}
	hash, err := auth.HashPassword(in.Password)
	if err != nil {
		return nil, fault.Invalid("password", "%v", err)
	}
	var u *ent.User
	err = s.DB.InTx(ctx, func(tx *database.Tx) error {
		t, err := tx.Ent.Tenant.Get(ctx, v.TenantID)
		if err != nil {
			return fmt.Errorf("loading tenant: %w", err)
		}
		_, domain, _ := strings.Cut(in.Email, "@")
		if !slices.Contains(t.EmailDomains, domain) {
			return fault.Invalid("email", "domain %s is not one of this tenant's email domains (%s)", domain, strings.Join(t.EmailDomains, ", "))
		}
		sys := viewer.SystemContext(ctx)
		if n, err := tx.Ent.User.Query().Where(user.Email(in.Email)).Count(sys); err != nil || n > 0 {
			if err != nil {
				return fmt.Errorf("checking email: %w", err)
			}
			return fault.Invalid("email", "a user with email %s already exists", in.Email)
		}
		u, err = createUser(ctx, tx.Ent, v.TenantID, in.Email, in.Name, hash, in.Role)
		return err
	})
	return u, err
}

// DeleteGroup deletes a group with its memberships. The group everyone
// cannot go: new users join it.
func (s *Service) DeleteGroup(ctx context.Context, id string) error {
	return s.DB.InTx(ctx, func(tx *database.Tx) error {
		g, err := tx.Ent.Group.Get(ctx, id)
		if err != nil {
			return err
		}
		if g.Name == EveryoneGroup {
			return fault.Invalid("id", "the group everyone cannot be deleted")
		}
		if _, err := tx.Ent.Membership.Delete().Where(membership.GroupID(id)).Exec(ctx); err != nil {
			return fmt.Errorf("deleting memberships of group %s: %w", id, err)
		}
		return tx.Ent.Group.DeleteOne(g).Exec(ctx)
	})
}
