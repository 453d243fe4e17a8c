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
		if in.Email, err = checkEmail(ctx, tx.Ent, t, in.Email, ""); err != nil {
			return err
		}
		u, err = createUser(ctx, tx.Ent, v.TenantID, in.Email, in.Name, hash, in.Role)
		return err
	})
	return u, err
}

// UpdateUser changes a user of the viewer's tenant. A new email passes the
// same checks as in CreateUser: the address decides the tenant its owner
// signs in to, so it must be on one of this tenant's domains.
func (s *Service) UpdateUser(ctx context.Context, id string, in ent.UpdateUserInput) (*ent.User, error) {
	v := viewer.FromContext(ctx)
	if !v.InTenant() || !v.Admin {
		return nil, fault.New(fault.Forbidden, "only tenant admins change users")
	}
	if in.Name != nil && len(*in.Name) > 200 {
		return nil, fault.Invalid("name", "at most 200 characters")
	}
	var u *ent.User
	err := s.DB.InTx(ctx, func(tx *database.Tx) error {
		// Loaded as the viewer: a user of another tenant is not found, before
		// anything is said about its email.
		old, err := tx.Ent.User.Get(ctx, id)
		if err != nil {
			return err
		}
		if in.Email != nil {
			t, err := tx.Ent.Tenant.Get(ctx, v.TenantID)
			if err != nil {
				return fmt.Errorf("loading tenant: %w", err)
			}
			e, err := checkEmail(ctx, tx.Ent, t, *in.Email, old.ID)
			if err != nil {
				return err
			}
			in.Email = &e
		}
		u, err = tx.Ent.User.UpdateOne(old).SetInput(in).Save(ctx)
		if err != nil {
			return fmt.Errorf("updating user %s: %w", id, err)
		}
		return nil
	})
	return u, err
}

// checkEmail normalizes email and checks that a user of tenant t (other
// than the user except) may have it: an address, on one of t's domains, and
// no other user's. The domain is checked before anyone's address is looked
// at, so "already exists" is only ever said about t's own domains, never
// about another tenant's.
func checkEmail(ctx context.Context, c *ent.Client, t *ent.Tenant, email, except string) (string, error) {
	email = auth.NormalizeEmail(email)
	if !emailRe.MatchString(email) {
		return "", fault.Invalid("email", "%q is not an email address", email)
	}
	_, domain, _ := strings.Cut(email, "@")
	if !slices.Contains(t.EmailDomains, domain) {
		return "", fault.Invalid("email", "domain %s is not one of this tenant's email domains (%s)", domain, strings.Join(t.EmailDomains, ", "))
	}
	n, err := c.User.Query().Where(user.Email(email), user.IDNEQ(except)).Count(viewer.SystemContext(ctx))
	if err != nil {
		return "", fmt.Errorf("checking email: %w", err)
	}
	if n > 0 {
		return "", fault.Invalid("email", "a user with email %s already exists", email)
	}
	return email, nil
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
