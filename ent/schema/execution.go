package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// Execution is a command run in a job's service through the relay (levers9
// exec, a sandbox's exec): who ran what, when, and how it ended. It is
// the job's exec history; the command's output is never kept.
type Execution struct{ ent.Schema }

// Mixin of the Execution.
func (Execution) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "ex"}, TimeMixin{}, TenantMixin{}, EnvironmentMixin{}}
}

// Fields of the Execution.
func (Execution) Fields() []ent.Field {
	return []ent.Field{
		field.String("job_id").Immutable(),
		field.String("service").Immutable(),
		field.String("user_id").Optional().Immutable().Comment("who ran it; empty for a token without a user"),
		field.Strings("command").Immutable(),
		field.Bool("tty").Default(false).Immutable(),
		field.Time("ended_at").Optional().Nillable(),
		field.Int("exit_code").Optional().Nillable(),
		field.String("error").Default("").Comment("why it ended without an exit code"),
	}
}

// Edges of the Execution.
func (Execution) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("job", Job.Type).Ref("executions").Field("job_id").Unique().Required().Immutable(),
	}
}

// Indexes of the Execution.
func (Execution) Indexes() []ent.Index {
	return []ent.Index{index.Fields("job_id", "created_at")}
}
