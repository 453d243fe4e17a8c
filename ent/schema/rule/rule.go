// Package rule holds the privacy rules of the data model. Tenant isolation,
// environment isolation and the admin-only rules live here and nowhere else:
// resolvers and handlers never add their own tenant filters.
package rule

import (
	"context"
	"fmt"

	"entgo.io/ent/entql"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/privacy"
	"github.com/levers9/levers9/internal/viewer"
)

// AllowIfSystem lets internal work through.
func AllowIfSystem() privacy.QueryMutationRule {
	return privacy.ContextQueryMutationRule(func(ctx context.Context) error {
		if v := viewer.FromContext(ctx); v != nil && v.System {
			return privacy.Allow
		}
		return privacy.Skip
	})
}

// DenyIfNoViewer refuses anything done without a viewer: a missing viewer is
// a bug, never a licence.
func DenyIfNoViewer() privacy.QueryMutationRule {
	return privacy.ContextQueryMutationRule(func(ctx context.Context) error {
		if viewer.FromContext(ctx) == nil {
			return privacy.Denyf("no viewer in context")
		}
		return privacy.Skip
	})
}

// AllowIfSuperadmin lets superadmins through, inside a tenant or not.
func AllowIfSuperadmin() privacy.QueryMutationRule {
	return privacy.ContextQueryMutationRule(func(ctx context.Context) error {
		if v := viewer.FromContext(ctx); v != nil && v.Superadmin {
			return privacy.Allow
		}
		return privacy.Skip
	})
}

// DenyAll ends a policy.
func DenyAll() privacy.QueryMutationRule { return privacy.AlwaysDenyRule() }

// AdminOnly refuses viewers who are not tenant admins.
func AdminOnly() privacy.QueryMutationRule {
	return privacy.ContextQueryMutationRule(func(ctx context.Context) error {
		if v := viewer.FromContext(ctx); v == nil || !v.Admin {
			return privacy.Denyf("only tenant admins may do this")
		}
		return privacy.Skip
	})
}

// FilterTenant restricts queries, updates and deletes to the viewer's tenant,
// and stamps (or checks) the tenant of created rows.
func FilterTenant() privacy.QueryMutationRule {
	return scoped("tenant_id", func(v *viewer.Viewer) (string, error) {
		if !v.InTenant() {
			return "", privacy.Denyf("not inside a tenant")
		}
		return v.TenantID, nil
	})
}

// FilterEnvironment does for environments what FilterTenant does for tenants.
func FilterEnvironment() privacy.QueryMutationRule {
	return scoped("environment_id", func(v *viewer.Viewer) (string, error) {
		if v.EnvironmentID == "" {
			return "", privacy.Denyf("no environment selected")
		}
		return v.EnvironmentID, nil
	})
}

// FilterSelf restricts rows to those whose column belongs to the viewer.
func FilterSelf(column string) privacy.QueryMutationRule {
	return scoped(column, func(v *viewer.Viewer) (string, error) {
		if v.UserID == "" {
			return "", privacy.Denyf("no user")
		}
		return v.UserID, nil
	})
}

// FilterSelfUnlessAdmin is FilterSelf for members; admins see the tenant.
func FilterSelfUnlessAdmin(column string) privacy.QueryMutationRule {
	self := FilterSelf(column)
	return ruleFuncs{
		query: func(ctx context.Context, q ent.Query) error {
			if viewer.FromContext(ctx).Admin {
				return privacy.Skip
			}
			return self.EvalQuery(ctx, q)
		},
		mutation: func(ctx context.Context, m ent.Mutation) error {
			if viewer.FromContext(ctx).Admin {
				return privacy.Skip
			}
			return self.EvalMutation(ctx, m)
		},
	}
}

type ruleFuncs struct {
	query    func(context.Context, ent.Query) error
	mutation func(context.Context, ent.Mutation) error
}

func (r ruleFuncs) EvalQuery(ctx context.Context, q ent.Query) error { return r.query(ctx, q) }
func (r ruleFuncs) EvalMutation(ctx context.Context, m ent.Mutation) error {
	return r.mutation(ctx, m)
}

// scoped filters reads and writes by column = want(viewer). On create, the
// column is filled in when unset and must match when set.
func scoped(column string, want func(*viewer.Viewer) (string, error)) privacy.QueryMutationRule {
	filter := privacy.FilterFunc(func(ctx context.Context, f privacy.Filter) error {
		id, err := want(viewer.FromContext(ctx))
		if err != nil {
			return err
		}
		f.Where(entql.FieldEQ(column, id))
		return privacy.Skip
	})
	return ruleFuncs{
		query: filter.EvalQuery,
		mutation: func(ctx context.Context, m ent.Mutation) error {
			if !m.Op().Is(ent.OpCreate) {
				return filter.EvalMutation(ctx, m)
			}
			id, err := want(viewer.FromContext(ctx))
			if err != nil {
				return err
			}
			got, ok := m.Field(column)
			if !ok || got == "" {
				if err := m.SetField(column, id); err != nil {
					return privacy.Denyf("setting %s: %v", column, err)
				}
				return privacy.Skip
			}
			if got != id {
				return privacy.Denyf("%s %v is not the viewer's", column, got)
			}
			return privacy.Skip
		},
	}
}

// EdgesInScope refuses a mutation that links to an object the viewer cannot
// see (another tenant's group, queue or user), whatever the relation.
func EdgesInScope() privacy.MutationRule {
	type clienter interface{ Client() *ent.Client }
	return privacy.MutationRuleFunc(func(ctx context.Context, m ent.Mutation) error {
		c, ok := m.(clienter)
		if !ok {
			return privacy.Denyf("mutation %T has no client", m)
		}
		seen := inScope(ctx)
		for _, e := range m.AddedEdges() {
			for _, id := range m.AddedIDs(e) {
				sid, _ := id.(string)
				if seen[sid] {
					continue
				}
				if _, err := c.Client().Noder(ctx, sid, ent.WithNodeType(ent.NodeType)); err != nil {
					return privacy.Denyf("%s %q: %v", e, sid, fmt.Errorf("not found"))
				}
			}
		}
		return privacy.Skip
	})
}

// ReadInScope returns ctx naming ids as objects its viewer has already read
// through these rules in the same transaction (or just created), so
// EdgesInScope need not read each back once more before a link to it: a
// submission links its job to a queue, project and owner it has just
// read, and its services to the job it has just inserted. The names hold
// for that viewer only; the system skips the check anyway.
func ReadInScope(ctx context.Context, ids ...string) context.Context {
	v := viewer.FromContext(ctx)
	seen := map[string]bool{}
	if prev, ok := ctx.Value(inScopeKey{}).(readIDs); ok && prev.viewer == v {
		for id := range prev.ids {
			seen[id] = true
		}
	}
	for _, id := range ids {
		if id != "" {
			seen[id] = true
		}
	}
	return context.WithValue(ctx, inScopeKey{}, readIDs{viewer: v, ids: seen})
}

type inScopeKey struct{}

type readIDs struct {
	viewer *viewer.Viewer
	ids    map[string]bool
}

// inScope is the set ReadInScope named for ctx's viewer, if any.
func inScope(ctx context.Context) map[string]bool {
	r, ok := ctx.Value(inScopeKey{}).(readIDs)
	if !ok || r.viewer == nil || r.viewer != viewer.FromContext(ctx) {
		return nil
	}
	return r.ids
}

// FilterOwnTenant restricts the tenants table to the viewer's tenant.
func FilterOwnTenant() privacy.QueryMutationRule {
	return scopedNoCreate("id", func(v *viewer.Viewer) (string, error) {
		if !v.InTenant() {
			return "", privacy.Denyf("not inside a tenant")
		}
		return v.TenantID, nil
	})
}

// FilterTenantOrSelf shows users of the viewer's tenant, and the viewer.
func FilterTenantOrSelf() privacy.QueryRule {
	return privacy.FilterFunc(func(ctx context.Context, f privacy.Filter) error {
		v := viewer.FromContext(ctx)
		self := entql.FieldEQ("id", v.UserID)
		if v.InTenant() {
			f.Where(entql.Or(entql.FieldEQ("tenant_id", v.TenantID), self))
		} else {
			f.Where(self)
		}
		return privacy.Skip
	})
}

func scopedNoCreate(column string, want func(*viewer.Viewer) (string, error)) privacy.QueryMutationRule {
	return privacy.FilterFunc(func(ctx context.Context, f privacy.Filter) error {
		id, err := want(viewer.FromContext(ctx))
		if err != nil {
			return err
		}
		f.Where(entql.FieldEQ(column, id))
		return privacy.Skip
	})
}

// StampCreator records the viewer as column of the rows they create; only
// internal work may name someone else.
func StampCreator(column string) privacy.MutationRule {
	return privacy.MutationRuleFunc(func(ctx context.Context, m ent.Mutation) error {
		if !m.Op().Is(ent.OpCreate) {
			return privacy.Skip
		}
		v := viewer.FromContext(ctx)
		if got, ok := m.Field(column); ok && got != "" {
			if v.System || got == v.UserID {
				return privacy.Skip
			}
			return privacy.Denyf("%s must be the viewer", column)
		}
		if err := m.SetField(column, v.UserID); err != nil {
			return privacy.Denyf("setting %s: %v", column, err)
		}
		return privacy.Skip
	})
}

// HostPath is a path on the server or a node (a storage's directory) as
// the viewer may see it: tenant admins and the system see it, members get
// nil. Where a host's files are is an admin's business, and a path helps
// whoever looks for a way to them. GraphQL and the dashboard both ask here.
func HostPath(ctx context.Context, p string) *string {
	v := viewer.FromContext(ctx)
	if v == nil || !(v.System || v.Admin || v.Superadmin && v.InTenant()) {
		return nil
	}
	return &p
}
