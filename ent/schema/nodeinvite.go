package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
	"github.com/levers9/levers9/ent/privacy"
	"github.com/levers9/levers9/ent/schema/rule"
)

// NodeInvite lets one machine join a tenant as a node. Only a hash of its
// code is stored; the code is shown once.
type NodeInvite struct{ ent.Schema }

// Mixin of the NodeInvite.
func (NodeInvite) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "inv"}, TimeMixin{}, TenantMixin{}}
}

// Fields of the NodeInvite.
func (NodeInvite) Fields() []ent.Field {
	return []ent.Field{
		field.String("code_hash").Sensitive().Unique().Immutable().
			Annotations(entgql.Skip(entgql.SkipAll)),
		field.String("node_name").Default("").
			Comment("name the joining node gets unless it asks for another"),
		field.String("created_by_id").Immutable(),
		field.Time("expires_at").Immutable(),
		field.Time("used_at").Optional().Nillable(),
		field.String("node_id").Optional().
			Comment("the node that joined with this invite"),
		field.Time("revoked_at").Optional().Nillable(),
	}
}

// Annotations of the NodeInvite.
func (NodeInvite) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entgql.RelayConnection(),
		entgql.QueryField("nodeInvites"),
	}
}

// Policy of the NodeInvite: invites are for tenant admins only, also to read.
func (NodeInvite) Policy() ent.Policy {
	return privacy.Policy{
		Query:    privacy.QueryPolicy{rule.AdminOnly()},
		Mutation: privacy.MutationPolicy{rule.AdminOnly()},
	}
}
