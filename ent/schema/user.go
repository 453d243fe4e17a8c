package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"github.com/levers9/levers9/ent/privacy"
	"github.com/levers9/levers9/ent/schema/rule"
)

// User is a person. Members and tenant admins belong to one tenant;
// superadmins belong to none and must enter a tenant to see inside it.
type User struct{ ent.Schema }

// Mixin of the User.
func (User) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "usr"}, TimeMixin{}}
}

// Fields of the User.
func (User) Fields() []ent.Field {
	return []ent.Field{
		field.String("tenant_id").Optional().Immutable().
			Annotations(entgql.Skip(entgql.SkipAll)),
		field.String("email").Unique().NotEmpty().MaxLen(254).
			Annotations(entgql.OrderField("EMAIL")),
		field.String("name").Default("").MaxLen(200).
			Annotations(entgql.OrderField("NAME")),
		field.String("password_hash").Sensitive().Optional().
			Annotations(entgql.Skip(entgql.SkipAll)),
		field.Enum("role").NamedValues("Member", "MEMBER", "Admin", "ADMIN").Default("MEMBER").
			Comment("role inside the user's tenant"),
		field.Bool("superadmin").Default(false).Immutable().
			Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
	}
}

// Edges of the User.
func (User) Edges() []ent.Edge {
	return []ent.Edge{
		edge.To("memberships", Membership.Type).
			Annotations(entgql.RelayConnection()),
		edge.To("jobs", Job.Type).
			Annotations(entgql.RelayConnection()),
		edge.To("api_tokens", APIToken.Type).
			Annotations(entgql.Skip(entgql.SkipAll)),
	}
}

// Indexes of the User.
func (User) Indexes() []ent.Index {
	return []ent.Index{index.Fields("tenant_id")}
}

// Annotations of the User.
func (User) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entgql.RelayConnection(),
		entgql.QueryField("users"),
		entgql.Mutations(entgql.MutationUpdate()),
	}
}

// Policy of the User: users of the viewer's tenant are visible (and the
// viewer, who may be a superadmin outside every tenant); admins change them.
func (User) Policy() ent.Policy {
	return privacy.Policy{
		Query: privacy.QueryPolicy{rule.AllowIfSystem(), rule.DenyIfNoViewer(), rule.FilterTenantOrSelf()},
		Mutation: privacy.MutationPolicy{
			rule.AllowIfSystem(), rule.DenyIfNoViewer(), rule.FilterTenant(), rule.EdgesInScope(), rule.AdminOnly(),
		},
	}
}
