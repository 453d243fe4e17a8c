package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// Environment is a separate space inside a tenant (main, staging, a branch).
type Environment struct{ ent.Schema }

// Mixin of the Environment.
func (Environment) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "env"}, TimeMixin{}, TenantMixin{}}
}

// Fields of the Environment.
func (Environment) Fields() []ent.Field {
	return []ent.Field{
		field.String("name").NotEmpty().Match(namePattern).
			Annotations(entgql.OrderField("NAME")),
	}
}

// Indexes of the Environment.
func (Environment) Indexes() []ent.Index {
	return []ent.Index{index.Fields("tenant_id", "name").Unique()}
}

// Annotations of the Environment.
func (Environment) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entgql.RelayConnection(),
		entgql.QueryField("environments"),
		entgql.Mutations(entgql.MutationCreate()),
	}
}

// Policy of the Environment.
func (Environment) Policy() ent.Policy { return adminWrites() }
