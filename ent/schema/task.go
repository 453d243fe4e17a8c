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
)

// Task is one call of a function: its pickled arguments, its state, its
// result or error, and the phases it went through (created_at is queued).
type Task struct{ ent.Schema }

// Mixin of the Task.
func (Task) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "task"}, TimeMixin{}, TenantMixin{}, EnvironmentMixin{}}
}

// Fields of the Task.
func (Task) Fields() []ent.Field {
	skip := entgql.Skip(entgql.SkipAll)
	phase := func(name string) ent.Field {
		return field.Time(name).Optional().Nillable().Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput))
	}
	return []ent.Field{
		field.String("function_id").Immutable(),
		field.String("app_id").Immutable(),
		field.String("owner_id").Immutable(),
		field.String("map_id").Optional().Immutable(),
		field.Int("map_index").Default(0).Immutable(),
		field.Enum("state").Values("PENDING", "RUNNING", "COMPLETE", "ERROR", "CANCELLED", "DEAD").Default("PENDING").
			Comment("DEAD: a task-queue item that failed every attempt (the dead letters)").
			Annotations(entgql.OrderField("STATE")),
		field.Enum("source").Values("CALL", "HTTP", "QUEUE", "CRON").Default("CALL").Immutable().
			Comment("what made it: a call from Python or GraphQL, an HTTP request, a task-queue put, a cron tick"),
		field.String("idempotency_key").Default("").Immutable().
			Comment("a second put with the same key in the app returns the first task"),
		field.Int("attempt").Default(0).Comment("runs started so far; 1 + retries at most"),
		field.Int("max_attempts").Default(1).Immutable(),
		field.Int("timeout_seconds").Default(300).Immutable(),
		field.Time("not_before").Optional().Nillable().Comment("a retry waits until then").Annotations(skip),
		field.Time("deadline").Optional().Nillable().Comment("the running attempt times out then").Annotations(skip),
		field.Bytes("args").Optional().Comment("pickled (args, kwargs), when small").Annotations(skip),
		field.String("args_blob").Default("").Comment("SHA-256 of the blob holding the arguments, when large").Annotations(skip),
		field.Bytes("result").Optional().Annotations(skip),
		field.String("result_blob").Default("").Annotations(skip),
		field.String("error_kind").Default("").Comment("exception, timeout, cancelled, container lost, ..."),
		field.String("error_message").Default(""),
		field.Text("error_traceback").Default(""),
		field.Bytes("error_exception").Optional().Comment("the pickled exception, when it pickles").Annotations(skip),
		field.String("container_id").Optional().Comment("the container running or that ran the last attempt"),
		phase("scheduled_at"), phase("image_ready_at"), phase("code_fetched_at"),
		phase("process_started_at"), phase("imported_at"), phase("started_at"), phase("finished_at"),
	}
}

// Edges of the Task.
func (Task) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("function", Function.Type).Ref("tasks").Field("function_id").Unique().Required().Immutable(),
		edge.From("map", FunctionMap.Type).Ref("tasks").Field("map_id").Unique().Immutable(),
	}
}

// Indexes of the Task.
func (Task) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("function_id", "state", "created_at", "map_index"),
		index.Fields("map_id", "map_index"),
		index.Fields("container_id", "state"),
		index.Fields("app_id", "state"),
		// The functions' periodic check looks for running calls.
		index.Fields("state"),
		index.Fields("tenant_id", "environment_id", "created_at"),
		index.Fields("app_id", "idempotency_key").Unique().Annotations(entsql.IndexWhere("idempotency_key <> ''")),
	}
}

// Annotations of the Task.
func (Task) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.RelayConnection(), entgql.QueryField("tasks")}
}

// Policy of the Task.
func (Task) Policy() ent.Policy {
	return privacy.Policy{Mutation: privacy.MutationPolicy{rule.FilterSelfUnlessAdmin("owner_id")}}
}
