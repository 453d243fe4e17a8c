package projects

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/charge"
)

// GrantListSize is how many of a project's latest grants its page lists.
const GrantListSize = 20

func recentGrants(ctx context.Context, c *ent.Client, projectID string) ([]*ent.Charge, error) {
	gs, err := c.Charge.Query().
		Where(charge.ProjectID(projectID), charge.KindEQ(charge.KindGrant), charge.PayerKindEQ(charge.PayerKindProject)).
		Order(ent.Desc(charge.FieldCreatedAt)).Limit(GrantListSize).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing grants of %s: %w", projectID, err)
	}
	return gs, nil
}
