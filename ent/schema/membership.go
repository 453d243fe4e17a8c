package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// Membership puts a user in a group.
type Membership struct{ ent.Schema }

// Mixin of the Membership.
func (Membership) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "mbr"}, TimeMixin{}, TenantMixin{}}
}

// Fields of the Membership.
func (Membership) Fields() []ent.Field {
	return []ent.Field{
		field.String("user_id").Immutable(),
		field.String("group_id").Immutable(),
	}
}

// Edges of the Membership.
func (Membership) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("user", User.Type).Ref("memberships").Field("user_id").Unique().Required().Immutable(),
		edge.From("group", Group.Type).Ref("memberships").Field("group_id").Unique().Required().Immutable(),
	}
}

// Indexes of the Membership.
func (Membership) Indexes() []ent.Index {
	return []ent.Index{index.Fields("user_id", "group_id").Unique()}
}

// Annotations of the Membership.
func (Membership) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entgql.RelayConnection(),
		entgql.Mutations(entgql.MutationCreate()),
	}
}

// Policy of the Membership.
func (Membership) Policy() ent.Policy { return adminWrites() }
