package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"github.com/levers9/levers9/internal/jobspec"
)

// Service is one container of a job. Services of a job reach each other by
// service name.
type Service struct{ ent.Schema }

// Mixin of the Service.
func (Service) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "svc"}, TimeMixin{}, TenantMixin{}, EnvironmentMixin{}}
}

// Fields of the Service.
func (Service) Fields() []ent.Field {
	return []ent.Field{
		field.String("job_id").Immutable(),
		field.String("name").NotEmpty().Immutable().
			Annotations(entgql.OrderField("NAME")),
		field.String("image").Default("").Immutable(),
		field.Strings("command").Optional().Immutable(),
		field.Strings("args").Optional().Immutable(),
		field.JSON("env", []jobspec.EnvVar{}).Optional().Immutable().
			Annotations(entgql.Type("[EnvVar!]")),
		field.Float("cpu").Default(0).Immutable(),
		field.Int64("memory_mib").Default(0).Immutable(),
		field.Int("gpus").Default(0).Immutable(),
		field.Strings("gpu_types").Optional().Immutable().
			Comment("the GPU type, or a preference list"),
		field.String("gpu_type").Default("").
			Comment("the GPU type the service was placed with"),
		field.Strings("gpu_devices").Optional().
			Comment("the GPU devices booked for the service on its node").
			Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
		field.JSON("ports", []jobspec.Port{}).Optional().Immutable().
			Annotations(entgql.Type("[Port!]")),
		field.Enum("status").NamedValues(jobStatuses...).Default("PENDING"),
		field.String("status_reason").Default(""),
		field.String("node_id").Optional(),
		field.Int("exit_code").Optional().Nillable(),
		field.Time("dispatched_at").Optional().Nillable().
			Comment("when the start was sent to the node's agent").
			Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
		field.JSON("host_ports", []jobspec.Port{}).Optional().
			Comment("the ports the agent gave the service").
			Annotations(entgql.Type("[Port!]"), entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
		field.Time("started_at").Optional().Nillable(),
		field.Time("finished_at").Optional().Nillable(),
	}
}

// Edges of the Service.
func (Service) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("job", Job.Type).Ref("services").Field("job_id").Unique().Required().Immutable(),
		edge.To("node", Node.Type).Field("node_id").Unique(),
	}
}

// Indexes of the Service.
func (Service) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("job_id", "name").Unique(),
		index.Fields("node_id", "status"),
	}
}

// Annotations of the Service.
func (Service) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.RelayConnection()}
}
