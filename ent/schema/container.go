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

// Container is a warm worker of a function: a job on the function's queue
// running `python -m levers9.runner`, with the phases of its start.
type Container struct{ ent.Schema }

// Mixin of the Container.
func (Container) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "ctr"}, TimeMixin{}, TenantMixin{}, EnvironmentMixin{}}
}

// Fields of the Container.
func (Container) Fields() []ent.Field {
	phase := func(name string) ent.Field {
		return field.Time(name).Optional().Nillable().Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput))
	}
	return []ent.Field{
		field.String("function_id").Immutable(),
		field.String("owner_id").Immutable(),
		field.String("job_id").Optional().Comment("set once its job is submitted"),
		field.Enum("state").Values("STARTING", "READY", "STOPPING", "STOPPED").Default("STARTING"),
		field.String("stop_reason").Default(""),
		phase("scheduled_at"), phase("image_ready_at"), phase("code_fetched_at"),
		phase("process_started_at"), phase("imported_at"),
		field.Time("last_task_at").Optional().Nillable().Comment("when it last finished or took a call; idle time counts from it"),
		field.Time("stopped_at").Optional().Nillable(),
	}
}

// Edges of the Container.
func (Container) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("function", Function.Type).Ref("containers").Field("function_id").Unique().Required().Immutable(),
		edge.To("job", Job.Type).Field("job_id").Unique(),
	}
}

// Indexes of the Container.
func (Container) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("function_id", "state"),
		index.Fields("job_id"),
		// The functions' periodic check looks for containers not stopped.
		index.Fields("state"),
	}
}

// Annotations of the Container.
func (Container) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.RelayConnection()}
}

// Policy of the Container.
func (Container) Policy() ent.Policy {
	return privacy.Policy{Mutation: privacy.MutationPolicy{rule.FilterSelfUnlessAdmin("owner_id")}}
}
