// Package ledger reads and writes the token ledger. Balances are derived
// from the immutable charge rows: grants are negative charges, so a payer's
// balance is minus the sum of its charges.
package ledger

import (
	"context"
	"fmt"
	"strings"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/ids"
	"github.com/levers9/levers9/internal/viewer"
)

// Service reads balances and writes grants for the front doors. Domain
// code that must read a balance inside its own transaction calls BalanceOf
// with that transaction's client.
type Service struct {
	DB *database.DB
}

// Payer is who a charge is paid by: a project, or a user, of a tenant.
// Front doors may leave TenantID empty: the service reads the viewer's.
type Payer struct {
	TenantID  string
	ProjectID string
	UserID    string
}

func (p Payer) String() string {
	if p.ProjectID != "" {
		return "project " + p.ProjectID
	}
	return "user " + p.UserID
}

// inViewerTenant is p in the tenant of the viewer of ctx; a payer of
// another tenant is refused.
func inViewerTenant(ctx context.Context, p Payer) (*viewer.Viewer, Payer, error) {
	v := viewer.FromContext(ctx)
	if !v.InTenant() || (p.TenantID != "" && p.TenantID != v.TenantID) {
		return v, p, fault.New(fault.Forbidden, "not inside the payer's tenant")
	}
	p.TenantID = v.TenantID
	return v, p, nil
}

// Balance is the payer's balance in the viewer's tenant. Callers check that
// the viewer may know it.
func (s *Service) Balance(ctx context.Context, p Payer) (billing.Tokens, error) {
	_, p, err := inViewerTenant(ctx, p)
	if err != nil {
		return 0, err
	}
	return BalanceOf(ctx, s.DB.Ent, p)
}

// BalanceOf is the balance of payer p of tenant p.TenantID read through c,
// which may be the client of the caller's transaction (a submission checks
// the balance in the transaction that stores the job). It checks no viewer:
// domain code only; front doors call Service.Balance. It reads the payer's
// one balances row, which the database keeps with every charge
// (database.BalanceKey), not the charges themselves.
func BalanceOf(ctx context.Context, c *ent.Client, p Payer) (billing.Tokens, error) {
	if p.TenantID == "" {
		return 0, fmt.Errorf("reading the balance of %s: no tenant", p)
	}
	b, err := c.Balance.Get(viewer.SystemContext(ctx), p.key())
	if ent.IsNotFound(err) {
		return 0, nil // never charged
	}
	if err != nil {
		return 0, fmt.Errorf("reading the balance of %s: %w", p, err)
	}
	return -b.Tokens, nil
}

// key is the ID of p's balances row.
func (p Payer) key() string {
	if p.ProjectID != "" {
		return database.BalanceKey(p.TenantID, p.ProjectID)
	}
	return database.BalanceKey(p.TenantID, p.UserID)
}

// Grant adds tokens to a payer's balance. Tenant admins only.
func (s *Service) Grant(ctx context.Context, p Payer, amount billing.Tokens, reason string) (*ent.Charge, error) {
	v, p, err := inViewerTenant(ctx, p)
	if err != nil || !v.Admin {
		return nil, fault.New(fault.Forbidden, "only tenant admins grant tokens")
	}
	if (p.ProjectID == "") == (p.UserID == "") {
		return nil, fault.Invalid("projectID", "grant to exactly one project or one user")
	}
	if amount == 0 || amount > billing.MaxTokens || amount < -billing.MaxTokens {
		return nil, fault.Invalid("tokens", "must be non-zero and at most %s in size", billing.MaxTokens)
	}
	reason = strings.TrimSpace(reason)
	if reason == "" || len(reason) > 500 {
		return nil, fault.Invalid("reason", "a grant needs a reason of at most 500 characters")
	}
	c := s.DB.Ent
	// The payer must be visible to the admin: this is the tenant check.
	create := c.Charge.Create().SetTenantID(p.TenantID).SetKind(charge.KindGrant).
		SetTokens(-amount).SetReason(reason).SetIdempotencyKey(ids.New("grant"))
	if p.ProjectID != "" {
		if _, err := c.Project.Get(ctx, p.ProjectID); err != nil {
			return nil, err
		}
		create.SetPayerKind(charge.PayerKindProject).SetProjectID(p.ProjectID)
	} else {
		if _, err := c.User.Get(ctx, p.UserID); err != nil {
			return nil, err
		}
		create.SetPayerKind(charge.PayerKindUser).SetUserID(p.UserID)
	}
	ch, err := create.Save(viewer.SystemContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("writing grant to %s: %w", p, err)
	}
	return ch, nil
}
