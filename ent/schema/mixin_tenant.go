package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"entgo.io/ent/schema/mixin"
	"github.com/levers9/levers9/ent/privacy"
	"github.com/levers9/levers9/ent/schema/rule"
)

// TenantMixin marks an entity as owned by one tenant. Its policy filters
// every query and mutation by the viewer's tenant: this is the one place
// tenant isolation is enforced.
type TenantMixin struct {
	mixin.Schema
	// Unindexed leaves tenant_id without an index of its own, for a table
	// only ever read through a narrower key that the tenant filter is
	// added to (log lines, by job) and written far more than read: one
	// index fewer to update per row.
	Unindexed bool
}

// Fields of the TenantMixin.
func (TenantMixin) Fields() []ent.Field {
	return []ent.Field{
		field.String("tenant_id").
			Immutable().
			NotEmpty().
			Annotations(entgql.Skip(entgql.SkipAll)),
	}
}

// Indexes of the TenantMixin.
func (m TenantMixin) Indexes() []ent.Index {
	if m.Unindexed {
		return nil
	}
	return []ent.Index{index.Fields("tenant_id")}
}

// Policy of the TenantMixin: internal work passes; everyone else sees and
// changes only rows of the tenant they act in, and links only to objects
// they can see.
func (TenantMixin) Policy() ent.Policy {
	return privacy.Policy{
		Query: privacy.QueryPolicy{rule.AllowIfSystem(), rule.DenyIfNoViewer(), rule.FilterTenant()},
		Mutation: privacy.MutationPolicy{
			rule.AllowIfSystem(), rule.DenyIfNoViewer(), rule.FilterTenant(), rule.EdgesInScope(),
		},
	}
}
