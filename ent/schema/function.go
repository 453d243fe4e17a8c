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

// Function is a Python function of an app that runs in containers: what
// to import, what each container asks of its queue, and how many
// containers may run.
type Function struct{ ent.Schema }

// Mixin of the Function.
func (Function) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "fn"}, TimeMixin{}, TenantMixin{}, EnvironmentMixin{}}
}

// Fields of the Function.
func (Function) Fields() []ent.Field {
	return []ent.Field{
		field.String("app_id").Immutable(),
		field.String("name").NotEmpty().Immutable().
			Annotations(entgql.OrderField("NAME")),
		field.String("module").NotEmpty().Immutable().Comment("module to import, relative to the code package"),
		field.String("qualname").NotEmpty().Immutable(),
		field.String("owner_id").Immutable(),
		field.String("queue_id").Immutable(),
		field.String("project_id").Optional().Immutable(),
		field.String("image").Default("").Immutable(),
		field.Int("gpus").Default(0).Immutable(),
		field.Strings("gpu_types").Optional().Immutable().Comment("acceptable types, first preferred"),
		field.Float("cpu").Default(1).Immutable(),
		field.Int64("memory_mib").Default(1024).Immutable(),
		field.Int("timeout_seconds").Default(300).Immutable().Comment("per call"),
		field.Int("retries").Default(0).Immutable(),
		field.Int("min_containers").Default(0).Immutable(),
		field.Int("max_containers").Default(10).Immutable(),
		field.Int("keep_warm").Default(0).Immutable(),
		field.Int("concurrency").Default(1).Immutable().Comment("calls one container runs at once"),
		field.Int("scaledown_window_seconds").Default(60).Immutable().
			Comment("an idle container above the floor stops after this long without a call"),
		field.Int("version").Default(1).Immutable().Comment("the app's version this function was deployed in"),
		field.Enum("kind").Values("FUNCTION", "ENDPOINT", "ASGI", "REALTIME", "TASK_QUEUE", "CRON", "BOX").Default("FUNCTION").Immutable(),
		field.String("deployment").Default("").Immutable().
			Comment("the name in URLs (/endpoint/NAME/vN): the function's name unless it says name="),
		field.String("code_hash").Default("").Immutable().
			Comment("SHA-256 of this version's code package").Annotations(entgql.Skip(entgql.SkipAll)),
		field.String("http_method").Default("").Immutable().Comment("an endpoint's method; empty: any"),
		field.Int("sync_timeout_seconds").Default(60).Immutable().
			Comment("an HTTP call still running after this long answers 202 with its task's URL"),
		field.Bool("public").Default(false).Immutable().Comment("its URLs answer callers without a token"),
		field.Strings("secrets").Optional().Immutable().Comment("names of the secrets its containers get as environment variables"),
		field.String("cron").Default("").Immutable().Comment("a CRON function's schedule, UTC"),
		field.Ints("ports").Optional().Immutable().Comment("a BOX's ports, reached at /box/NAME/PORT/"),
		field.Strings("command").Optional().Immutable().Comment("a BOX that runs a command rather than the function (levers9 box run)"),
		field.String("blueprint_id").Optional().Immutable().Comment("the blueprint its containers run; image is the blueprint's"),
		field.Time("stopped_at").Optional().Nillable().Comment("its version was stopped: no calls, no containers").
			Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
		field.Time("next_run_at").Optional().Nillable().Comment("a CRON function's next tick").
			Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
		field.Time("last_run_at").Optional().Nillable().Comment("a CRON function's last tick, run or skipped").
			Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
		field.String("last_run_task_id").Optional().Comment("the task of the last tick that ran").
			Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
		field.Int("skipped_runs").Default(0).Comment("ticks skipped because the previous run was still going").
			Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
	}
}

// Edges of the Function.
func (Function) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("app", App.Type).Ref("functions").Field("app_id").Unique().Required().Immutable(),
		edge.To("queue", Queue.Type).Field("queue_id").Unique().Required().Immutable(),
		edge.To("tasks", Task.Type).
			Annotations(entgql.RelayConnection(), entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
		edge.To("containers", Container.Type).
			Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
	}
}

// Indexes of the Function.
func (Function) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("app_id", "name", "version").Unique(),
		index.Fields("tenant_id", "environment_id", "deployment"),
		index.Fields("kind", "next_run_at"),
	}
}

// Annotations of the Function.
func (Function) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.RelayConnection()}
}

// Policy of the Function.
func (Function) Policy() ent.Policy {
	return privacy.Policy{Mutation: privacy.MutationPolicy{rule.FilterSelfUnlessAdmin("owner_id")}}
}
