package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/mixin"
	"github.com/levers9/levers9/ent/privacy"
	"github.com/levers9/levers9/ent/schema/rule"
)

// EnvironmentMixin marks an entity as living in one environment of its
// tenant; queries see only the viewer's environment.
type EnvironmentMixin struct{ mixin.Schema }

// Fields of the EnvironmentMixin.
func (EnvironmentMixin) Fields() []ent.Field {
	return []ent.Field{
		field.String("environment_id").
			Immutable().
			NotEmpty().
			Annotations(entgql.Skip(entgql.SkipAll)),
	}
}

// Policy of the EnvironmentMixin: rows of other environments are invisible.
func (EnvironmentMixin) Policy() ent.Policy {
	return privacy.Policy{
		Query:    privacy.QueryPolicy{rule.AllowIfSystem(), rule.FilterEnvironment()},
		Mutation: privacy.MutationPolicy{rule.AllowIfSystem(), rule.FilterEnvironment()},
	}
}
