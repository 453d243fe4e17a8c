package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"github.com/levers9/levers9/ent/privacy"
	"github.com/levers9/levers9/ent/schema/rule"
)

// FunctionMap is one .map() call: a task per item, numbered in input
// order, followed by its ID (a client that died resumes by it).
type FunctionMap struct{ ent.Schema }

// Mixin of the FunctionMap.
func (FunctionMap) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "map"}, TimeMixin{}, TenantMixin{}, EnvironmentMixin{}}
}

// Fields of the FunctionMap.
func (FunctionMap) Fields() []ent.Field {
	return []ent.Field{
		field.String("function_id").Immutable(),
		field.String("app_id").Immutable(),
		field.String("owner_id").Immutable(),
		field.Int("total").Immutable(),
		field.Int("succeeded").Default(0),
		field.Int("failed").Default(0).Comment("ended in error or cancelled"),
		field.Time("finished_at").Optional().Nillable(),
	}
}

// Edges of the FunctionMap.
func (FunctionMap) Edges() []ent.Edge {
	return []ent.Edge{
		edge.To("function", Function.Type).Field("function_id").Unique().Required().Immutable(),
		edge.To("tasks", Task.Type).
			Annotations(entgql.RelayConnection(), entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
	}
}

// Annotations of the FunctionMap.
func (FunctionMap) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.RelayConnection()}
}

// Policy of the FunctionMap.
func (FunctionMap) Policy() ent.Policy {
	return privacy.Policy{Mutation: privacy.MutationPolicy{rule.FilterSelfUnlessAdmin("owner_id")}}
}
