package ledger

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/viewer"
)

// ProjectBalances is Balance for many projects of the viewer's tenant in one
// query, by project ID; projects without charges have a zero balance.
// Callers check that the viewer may know them (access.UsableProjects).
func (s *Service) ProjectBalances(ctx context.Context, projectIDs []string) (map[string]billing.Tokens, error) {
	return s.balances(ctx, charge.PayerKindProject, charge.FieldProjectID, projectIDs)
}

// UserBalances is Balance for many users of the viewer's tenant in one
// query, by user ID; users without charges have a zero balance. Callers
// check that the viewer may know them.
func (s *Service) UserBalances(ctx context.Context, userIDs []string) (map[string]billing.Tokens, error) {
	return s.balances(ctx, charge.PayerKindUser, charge.FieldUserID, userIDs)
}

// balances sums the charges paid by kind, grouped by column col (the
// payer's ID), for the payers ids.
func (s *Service) balances(ctx context.Context, kind charge.PayerKind, col string, ids []string) (map[string]billing.Tokens, error) {
	v, _, err := inViewerTenant(ctx, Payer{})
	if err != nil {
		return nil, err
	}
	out := make(map[string]billing.Tokens, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	for _, id := range ids {
		out[id] = 0
	}
	// Rows are scanned by column name; the grouped one is set.
	var rows []struct {
		ProjectID *string `json:"project_id"`
		UserID    *string `json:"user_id"`
		Sum       *int64  `json:"sum"`
	}
	q := s.DB.Ent.Charge.Query().Where(charge.TenantID(v.TenantID), charge.PayerKindEQ(kind))
	if kind == charge.PayerKindProject {
		q = q.Where(charge.ProjectIDIn(ids...))
	} else {
		q = q.Where(charge.UserIDIn(ids...))
	}
	// System rights, as in BalanceOf: a balance counts every charge of its
	// payer, not only those the viewer may see.
	err = q.GroupBy(col).Aggregate(ent.As(ent.Sum(charge.FieldTokens), "sum")).Scan(viewer.SystemContext(ctx), &rows)
	if err != nil {
		return nil, fmt.Errorf("summing charges of %d %s payers: %w", len(ids), kind, err)
	}
	for _, r := range rows {
		id := r.ProjectID
		if kind == charge.PayerKindUser {
			id = r.UserID
		}
		if id != nil && r.Sum != nil {
			out[*id] = -billing.Tokens(*r.Sum)
		}
	}
	return out, nil
}
