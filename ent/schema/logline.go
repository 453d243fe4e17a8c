package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// LogLine is one line of output of a service. Lines are numbered per job by
// the agent; (job, seq) is unique, so a resent batch is stored once.
type LogLine struct{ ent.Schema }

// Mixin of the LogLine.
func (LogLine) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "log"}, TenantMixin{Unindexed: true}, EnvironmentMixin{}}
}

// Fields of the LogLine.
func (LogLine) Fields() []ent.Field {
	return []ent.Field{
		field.String("job_id").Immutable(),
		field.Int("attempt").Default(1).Immutable().
			Comment("the job's attempt that wrote the line; each attempt numbers its lines from 1"),
		field.String("service").Immutable(),
		field.Enum("stream").Values("stdout", "stderr", "system").Immutable(),
		field.Int64("seq").Immutable(),
		field.Time("time").Immutable(),
		field.Text("text").Immutable(),
	}
}

// Indexes of the LogLine.
func (LogLine) Indexes() []ent.Index {
	return []ent.Index{index.Fields("job_id", "attempt", "seq").Unique()}
}

// Annotations of the LogLine: served by the jobLogs subscription.
func (LogLine) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.Skip(entgql.SkipAll)}
}
