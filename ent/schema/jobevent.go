package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// JobEvent records one transition of a job or of one of its services, with
// its time and reason. Rows are never changed.
type JobEvent struct{ ent.Schema }

// Mixin of the JobEvent.
func (JobEvent) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "jev"}, TimeMixin{}, TenantMixin{}, EnvironmentMixin{}}
}

// Fields of the JobEvent.
func (JobEvent) Fields() []ent.Field {
	return []ent.Field{
		field.String("job_id").Immutable(),
		field.String("service").Default("").Immutable().
			Comment("the service, or empty for the job itself"),
		field.Enum("status").NamedValues(jobStatuses...).Immutable(),
		field.String("reason").Default("").Immutable(),
		field.Time("at").Immutable().
			Comment("when it happened (on the node, for agent reports)"),
		field.String("node_id").Optional().Immutable().
			Comment("for a requeue after a lost node: the node whose run ended, which may still send that attempt's output"),
		field.Int("attempt").Optional().Immutable().
			Comment("for a requeue after a lost node: the attempt that ended"),
	}
}

// Indexes of the JobEvent.
func (JobEvent) Indexes() []ent.Index {
	return []ent.Index{index.Fields("job_id", "id")}
}

// Annotations of the JobEvent: served by the jobEvents subscription.
func (JobEvent) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.Skip(entgql.SkipAll)}
}
