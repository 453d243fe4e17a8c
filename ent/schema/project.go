package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// Project is a shared token budget that jobs can be charged to. Its members
// are the users of its groups.
type Project struct{ ent.Schema }

// Mixin of the Project.
func (Project) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "prj"}, TimeMixin{}, TenantMixin{}}
}

// Fields of the Project.
func (Project) Fields() []ent.Field {
	return []ent.Field{
		field.String("name").NotEmpty().Match(namePattern).
			Annotations(entgql.OrderField("NAME")),
		field.String("description").Default("").MaxLen(1000),
	}
}

// Edges of the Project.
func (Project) Edges() []ent.Edge {
	return []ent.Edge{
		edge.To("groups", Group.Type),
		edge.From("jobs", Job.Type).Ref("project").
			Annotations(entgql.RelayConnection(), entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
	}
}

// Indexes of the Project.
func (Project) Indexes() []ent.Index {
	return []ent.Index{index.Fields("tenant_id", "name").Unique()}
}

// Annotations of the Project.
func (Project) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entgql.RelayConnection(),
		entgql.QueryField("projects"),
		entgql.Mutations(entgql.MutationCreate(), entgql.MutationUpdate()),
	}
}

// Policy of the Project.
func (Project) Policy() ent.Policy { return adminWrites() }
