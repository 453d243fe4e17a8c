package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
	"github.com/levers9/levers9/ent/privacy"
	"github.com/levers9/levers9/ent/schema/rule"
)

// Tenant is one organisation, sealed off from every other.
type Tenant struct{ ent.Schema }

// Mixin of the Tenant.
func (Tenant) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "tnt"}, TimeMixin{}}
}

// Fields of the Tenant.
func (Tenant) Fields() []ent.Field {
	return []ent.Field{
		field.String("name").NotEmpty().MaxLen(200).
			Annotations(entgql.OrderField("NAME")),
		field.String("slug").Unique().Immutable().Match(slugPattern).
			Comment("URL-safe short name, unique across the installation"),
		field.Strings("email_domains").Optional().
			Comment("users signing in as you@domain land in the tenant owning domain"),
		field.Bool("require_project").Default(false).
			Comment("every job must name a project to charge"),
		field.Enum("budget_policy").NamedValues("Stop", "STOP", "Finish", "FINISH").Default("STOP").
			Comment("what running jobs do when their payer runs out of tokens"),
	}
}

// Annotations of the Tenant.
func (Tenant) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entgql.RelayConnection(),
		entgql.QueryField("tenants").Description("All tenants: superadmins only."),
		entgql.Mutations(entgql.MutationUpdate()),
	}
}

// Policy of the Tenant: superadmins see and change every tenant; others see
// their own, and its admins change its settings.
func (Tenant) Policy() ent.Policy {
	return privacy.Policy{
		Query: privacy.QueryPolicy{
			rule.AllowIfSystem(), rule.DenyIfNoViewer(), rule.AllowIfSuperadmin(), rule.FilterOwnTenant(),
		},
		Mutation: privacy.MutationPolicy{
			rule.AllowIfSystem(), rule.DenyIfNoViewer(), rule.AllowIfSuperadmin(),
			privacy.DenyMutationOperationRule(ent.OpCreate | ent.OpDelete | ent.OpDeleteOne),
			rule.AdminOnly(), rule.FilterOwnTenant(),
		},
	}
}
