package tenancy

import (
	"context"
	"fmt"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
)

// UsageWindow is how far back Usage sums the tokens spent.
const UsageWindow = 30 * 24 * time.Hour

// Usage is what one tenant uses, as the superadmin's tenant list shows it.
type Usage struct {
	RunningJobs int
	// Spent is the tokens charged (debits only: grants and refunds are
	// not spending) in the UsageWindow up to now.
	Spent              billing.Tokens
	Nodes, NodesOnline int
}

// Usages returns every tenant's usage by tenant ID (a tenant using nothing
// is absent), with one grouped query per figure however many tenants there
// are. Superadmins only: the figures cross tenants, which the ent policy
// lets no viewer read, so they are read as the system and only the sums
// leave here.
func (s *Service) Usages(ctx context.Context, now time.Time) (map[string]*Usage, error) {
	if v := viewer.FromContext(ctx); v == nil || !v.Superadmin {
		return nil, fault.New(fault.Forbidden, "only superadmins see every tenant's usage")
	}
	sys := viewer.SystemContext(ctx)
	out := map[string]*Usage{}
	of := func(id string) *Usage {
		if out[id] == nil {
			out[id] = &Usage{}
		}
		return out[id]
	}
	var running []struct {
		TenantID string `json:"tenant_id"`
		Count    int    `json:"count"`
	}
	err := s.DB.Ent.Job.Query().Where(job.StatusEQ(job.StatusRunning)).
		GroupBy(job.FieldTenantID).Aggregate(ent.Count()).Scan(sys, &running)
	if err != nil {
		return nil, fmt.Errorf("counting running jobs per tenant: %w", err)
	}
	for _, r := range running {
		of(r.TenantID).RunningJobs = r.Count
	}
	var spent []struct {
		TenantID string `json:"tenant_id"`
		Sum      *int64 `json:"sum"`
	}
	err = s.DB.Ent.Charge.Query().Where(charge.CreatedAtGTE(now.Add(-UsageWindow)), charge.TokensGT(0)).
		GroupBy(charge.FieldTenantID).Aggregate(ent.Sum(charge.FieldTokens)).Scan(sys, &spent)
	if err != nil {
		return nil, fmt.Errorf("summing tokens spent per tenant: %w", err)
	}
	for _, r := range spent {
		if r.Sum != nil {
			of(r.TenantID).Spent = billing.Tokens(*r.Sum)
		}
	}
	var nodes []struct {
		TenantID string      `json:"tenant_id"`
		Status   node.Status `json:"status"`
		Count    int         `json:"count"`
	}
	err = s.DB.Ent.Node.Query().GroupBy(node.FieldTenantID, node.FieldStatus).Aggregate(ent.Count()).Scan(sys, &nodes)
	if err != nil {
		return nil, fmt.Errorf("counting nodes per tenant: %w", err)
	}
	for _, r := range nodes {
		u := of(r.TenantID)
		u.Nodes += r.Count
		if r.Status == node.StatusOnline {
			u.NodesOnline += r.Count
		}
	}
	return out, nil
}
