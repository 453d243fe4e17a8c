package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"github.com/levers9/levers9/internal/billing"
)

// Queue is what jobs are submitted to: which nodes run them, what one job
// may ask for, who may use it and what it costs.
type Queue struct{ ent.Schema }

// Mixin of the Queue.
func (Queue) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "que"}, TimeMixin{}, TenantMixin{}}
}

// Fields of the Queue.
func (Queue) Fields() []ent.Field {
	tokens := func(name, comment string) ent.Field {
		return field.Int64(name).GoType(billing.Tokens(0)).Default(0).Comment(comment).
			Annotations(entgql.Type("Tokens"), entgql.Skip(entgql.SkipWhereInput))
	}
	return []ent.Field{
		field.String("name").NotEmpty().Match(namePattern).
			Annotations(entgql.OrderField("NAME")),
		field.String("description").Default("").MaxLen(1000),
		field.Enum("mode").NamedValues("Interactive", "INTERACTIVE", "Batch", "BATCH", "Both", "BOTH").Default("BOTH"),
		field.Int("max_gpus_per_job").Default(8).NonNegative(),
		field.Float("max_cpu_per_job").Default(64).Min(0),
		field.Int64("max_memory_mib_per_job").Default(256 * 1024).NonNegative(),
		field.Float("default_cpu").Default(1).Min(0.001).
			Comment("CPUs a service gets when it names none"),
		field.Int64("default_memory_mib").Default(1024).Min(1).
			Comment("memory in MiB a service gets when it names none"),
		field.JSON("gpu_prices", []billing.GPURate{}).Optional().
			Comment("tokens per GPU-minute, per GPU type").
			Annotations(entgql.Type("[GPURate!]")),
		tokens("cpu_price", "tokens per CPU-minute"),
		tokens("memory_price", "tokens per GiB-minute of memory"),
		tokens("start_fee", "tokens charged once when a job starts"),
		field.Float("multiplier").Default(1).Positive(),
		// Interactive jobs nobody uses still cost tokens: after this long
		// without relay traffic, an attached terminal or an exec they are
		// warned, then stopped. Batch jobs never idle-stop.
		field.Int("idle_timeout_seconds").Default(0).Range(0, 30*24*3600).
			Comment("stop interactive jobs idle this long; 0 never"),
		// Set by a scheduling pass that stopped early (no node had room for
		// the smallest request waiting), cleared by one that read every
		// waiting job. While set, a job submitted here gets the waiting
		// note itself, so passes over a long backlog need not note it.
		field.Bool("backlogged").Default(false).
			Annotations(entgql.Skip(entgql.SkipAll)),
	}
}

// Edges of the Queue.
func (Queue) Edges() []ent.Edge {
	return []ent.Edge{
		edge.To("nodes", Node.Type),
		edge.To("storages", Storage.Type),
		edge.To("groups", Group.Type),
		edge.From("jobs", Job.Type).Ref("queue").
			Annotations(entgql.RelayConnection(), entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
	}
}

// Indexes of the Queue.
func (Queue) Indexes() []ent.Index {
	return []ent.Index{index.Fields("tenant_id", "name").Unique()}
}

// Annotations of the Queue.
func (Queue) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entgql.RelayConnection(),
		entgql.QueryField("queues"),
		entgql.Mutations(entgql.MutationCreate(), entgql.MutationUpdate()),
	}
}

// Policy of the Queue.
func (Queue) Policy() ent.Policy { return adminWrites() }
