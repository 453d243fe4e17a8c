package ledger

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent/balance"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/viewer"
)

// ProjectBalances is Balance for many projects of the viewer's tenant in one
// query, by project ID; projects without charges have a zero balance.
// Callers check that the viewer may know them (access.UsableProjects).
func (s *Service) ProjectBalances(ctx context.Context, projectIDs []string) (map[string]billing.Tokens, error) {
	return s.balances(ctx, true, projectIDs)
}

// UserBalances is Balance for many users of the viewer's tenant in one
// query, by user ID; users without charges have a zero balance. Callers
// check that the viewer may know them.
func (s *Service) UserBalances(ctx context.Context, userIDs []string) (map[string]billing.Tokens, error) {
	return s.balances(ctx, false, userIDs)
}

// balances reads the balances of the payers ids (projects when project,
// else users) in the viewer's tenant (see BalanceOf).
func (s *Service) balances(ctx context.Context, project bool, ids []string) (map[string]billing.Tokens, error) {
	v, _, err := inViewerTenant(ctx, Payer{})
	if err != nil {
		return nil, err
	}
	out := make(map[string]billing.Tokens, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		out[id] = 0
		p := Payer{TenantID: v.TenantID, UserID: id}
		if project {
			p = Payer{TenantID: v.TenantID, ProjectID: id}
		}
		keys[i] = p.key()
	}
	// System rights, as in BalanceOf: a balance counts every charge of its
	// payer, not only those the viewer may see.
	rows, err := s.DB.Ent.Balance.Query().Where(balance.IDIn(keys...)).All(viewer.SystemContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("reading the balances of %d payers: %w", len(ids), err)
	}
	for _, r := range rows {
		out[r.PayerID] = -r.Tokens
	}
	return out, nil
}
