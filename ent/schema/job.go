package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"github.com/levers9/levers9/ent/privacy"
	"github.com/levers9/levers9/ent/schema/rule"

	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/jobspec"
)

// Job is what a user submits: services scheduled together on one node.
type Job struct{ ent.Schema }

// jobStatuses are shared by jobs and their services.
var jobStatuses = []string{
	"Pending", "PENDING", "Running", "RUNNING", "Complete", "COMPLETE",
	"Error", "ERROR", "Cancelled", "CANCELLED",
}

// Mixin of the Job.
func (Job) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "job"}, TimeMixin{}, TenantMixin{}, EnvironmentMixin{}}
}

// Fields of the Job.
func (Job) Fields() []ent.Field {
	return []ent.Field{
		field.String("name").Default("").
			Annotations(entgql.OrderField("NAME")),
		field.JSON("spec", jobspec.Job{}).Immutable().
			Comment("the specification as submitted").
			Annotations(entgql.Skip(entgql.SkipAll)),
		field.Enum("status").NamedValues(jobStatuses...).Default("PENDING").
			Annotations(entgql.OrderField("STATUS")),
		field.String("status_reason").Default(""),
		field.Time("started_at").Optional().Nillable(),
		field.Time("finished_at").Optional().Nillable(),
		field.String("queue_id").Immutable(),
		field.String("project_id").Optional().Immutable(),
		field.String("owner_id").Immutable(),
		field.Bool("interactive").Default(false).Immutable(),
		field.Enum("kind").Values(jobspec.KindJob, jobspec.KindFunction, jobspec.KindBuild, jobspec.KindSandbox).Default(jobspec.KindJob).Immutable().
			Comment("what made it: a user, a function's container, a blueprint build, a sandbox").
			Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
		field.Int("priority").Default(0).
			Annotations(entgql.OrderField("PRIORITY")),
		field.Int("timeout_seconds").Default(0).Immutable(),
		field.Int("retries").Default(0).Immutable(),
		field.Int("attempt").Default(1).
			Comment("1 for the first run; requeued jobs count up to 1 + retries").
			Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
		// The least CPU and memory any one of its services asks for (a
		// service's request never changes): the scheduler's early stop asks
		// for the least of these over a queue's pending jobs off the
		// partial indexes below, never joining every waiting service.
		field.Float("smallest_cpu").Default(0).Min(0).Immutable().
			Annotations(entgql.Skip(entgql.SkipAll)),
		field.Int64("smallest_memory_mib").Default(0).NonNegative().Immutable().
			Annotations(entgql.Skip(entgql.SkipAll)),
		field.Int("gpus").Default(0).Immutable().
			Comment("GPUs over all services"),
		field.Int64("estimate_per_minute").GoType(billing.Tokens(0)).Default(0).
			Comment("tokens per minute, priced at submission").
			Annotations(entgql.Type("Tokens"), entgql.Skip(entgql.SkipWhereInput)),
		field.Int64("estimate_start_fee").GoType(billing.Tokens(0)).Default(0).
			Annotations(entgql.Type("Tokens"), entgql.Skip(entgql.SkipWhereInput)),
		// Billing: a job is charged at the prices in force when it started.
		field.JSON("rates", billing.Rates{}).Optional().
			Comment("the queue's prices when the job started").
			Annotations(entgql.Skip(entgql.SkipAll)),
		field.Int64("price_per_minute").GoType(billing.Tokens(0)).Default(0).
			Comment("tokens per running minute, fixed when the job started").
			Annotations(entgql.Type("Tokens"), entgql.Skip(entgql.SkipWhereInput)),
		field.Int64("metered_minutes").Default(0).
			Comment("minutes of run time charged so far").
			Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput, entgql.SkipWhereInput)),
		field.Bool("metering_closed").Default(false).
			Comment("the job has ended and its last partial minute is charged").
			Annotations(entgql.Skip(entgql.SkipAll)),
		field.Time("last_active_at").Optional().Nillable().
			Comment("last relay traffic, attached terminal or exec; idle stop counts from it").
			Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput, entgql.SkipWhereInput)),
		// NULL when the client sent none: unique indexes let NULLs repeat.
		field.String("idempotency_key").Optional().Nillable().Immutable().MaxLen(200).
			Comment("the client's key for this submission; resubmitting with it returns this job").
			Annotations(entgql.Skip(entgql.SkipAll)),
		// Empty when tracing is off: scheduling, dispatch and the agent's
		// start run later and elsewhere, and join the submission's trace.
		field.String("trace_parent").Default("").Immutable().MaxLen(55).
			Comment("W3C traceparent of the submission's span").
			Annotations(entgql.Skip(entgql.SkipAll)),
	}
}

// Edges of the Job.
func (Job) Edges() []ent.Edge {
	return []ent.Edge{
		edge.To("queue", Queue.Type).Field("queue_id").Unique().Required().Immutable(),
		edge.To("project", Project.Type).Field("project_id").Unique().Immutable(),
		edge.From("owner", User.Type).Ref("jobs").Field("owner_id").Unique().Required().Immutable(),
		edge.To("services", Service.Type),
		edge.To("executions", Execution.Type).Annotations(entgql.Skip(entgql.SkipAll)),
	}
}

// Indexes of the Job.
func (Job) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("tenant_id", "environment_id", "status"),
		// Job lists page by ID inside the viewer's tenant and environment.
		index.Fields("tenant_id", "environment_id", "id"),
		// The scheduler takes pending jobs of a queue by priority, then age,
		// then ID, a page at a time: in that order, so a page is read off the
		// index, not sorted out of every waiting job of the queue.
		index.Fields("queue_id", "status", "priority", "created_at", "id").
			Annotations(entsql.DescColumns("priority")),
		// The smallest request waiting in a queue: each least value is the
		// first entry of its index among the queue's pending jobs (only
		// those are in it), however many wait. The second condition, true
		// of every job (requests are never negative), keeps any other read
		// of pending jobs off these: PostgreSQL's planner, on the stale
		// statistics of a burst, took them for the scheduler's page and
		// sorted every waiting job.
		index.Fields("queue_id", "smallest_cpu").
			Annotations(entsql.IndexWhere("status = 'PENDING' AND smallest_cpu >= 0")),
		index.Fields("queue_id", "smallest_memory_mib").
			Annotations(entsql.IndexWhere("status = 'PENDING' AND smallest_memory_mib >= 0")),
		// The node liveness sweep (every few seconds) and other safety nets
		// look for live jobs among every job ever run.
		index.Fields("status"),
		// The meter visits started jobs that are not fully charged.
		index.Fields("metering_closed", "started_at"),
		// A retried submitJob with the same key finds the first job; the
		// constraint settles two submissions racing with one key.
		index.Fields("tenant_id", "owner_id", "idempotency_key").Unique(),
	}
}

// Annotations of the Job.
func (Job) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entgql.RelayConnection(),
		entgql.QueryField("jobs"),
	}
}

// Policy of the Job: everyone in the environment sees its jobs; members
// change only their own.
func (Job) Policy() ent.Policy {
	return privacy.Policy{Mutation: privacy.MutationPolicy{rule.FilterSelfUnlessAdmin("owner_id")}}
}
