package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// Group is a set of users. Access to queues, projects and buckets is granted
// to groups, never to single users.
type Group struct{ ent.Schema }

// Mixin of the Group.
func (Group) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "grp"}, TimeMixin{}, TenantMixin{}}
}

// Fields of the Group.
func (Group) Fields() []ent.Field {
	return []ent.Field{
		field.String("name").NotEmpty().Match(namePattern).
			Annotations(entgql.OrderField("NAME")),
		field.String("description").Default("").MaxLen(1000),
	}
}

// Edges of the Group.
func (Group) Edges() []ent.Edge {
	return []ent.Edge{
		edge.To("memberships", Membership.Type).
			Annotations(entgql.RelayConnection(), entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
		edge.From("queues", Queue.Type).Ref("groups"),
		edge.From("projects", Project.Type).Ref("groups"),
		edge.From("readable_buckets", Bucket.Type).Ref("read_groups"),
		edge.From("writable_buckets", Bucket.Type).Ref("write_groups"),
	}
}

// Indexes of the Group.
func (Group) Indexes() []ent.Index {
	return []ent.Index{index.Fields("tenant_id", "name").Unique()}
}

// Annotations of the Group.
func (Group) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entgql.RelayConnection(),
		entgql.QueryField("groups"),
		entgql.Mutations(entgql.MutationCreate(), entgql.MutationUpdate()),
	}
}

// Policy of the Group.
func (Group) Policy() ent.Policy { return adminWrites() }
