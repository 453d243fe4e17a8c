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
	v, _, err := inViewerTenant(ctx, Payer{})
	if err != nil {
		return nil, err
	}
	out := make(map[string]billing.Tokens, len(projectIDs))
	if len(projectIDs) == 0 {
		return out, nil
	}
	var rows []struct {
		ProjectID *string `json:"project_id"`
		Sum       *int64  `json:"sum"`
	}
	// System rights, as in BalanceOf: a project's balance counts every
	// member's charges, not only the viewer's.
	err = s.DB.Ent.Charge.Query().
		Where(charge.TenantID(v.TenantID), charge.PayerKindEQ(charge.PayerKindProject), charge.ProjectIDIn(projectIDs...)).
		GroupBy(charge.FieldProjectID).Aggregate(ent.As(ent.Sum(charge.FieldTokens), "sum")).
		Scan(viewer.SystemContext(ctx), &rows)
	if err != nil {
		return nil, fmt.Errorf("summing charges of %d projects: %w", len(projectIDs), err)
	}
	for _, id := range projectIDs {
		out[id] = 0
	}
	for _, r := range rows {
		if r.ProjectID != nil && r.Sum != nil {
			out[*r.ProjectID] = -billing.Tokens(*r.Sum)
		}
	}
	return out, nil
}
