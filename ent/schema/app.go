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

// App groups the functions of one script. An ephemeral app lives while
// the script that made it runs (`levers9 run app.py`) and is stopped when
// it ends; a deployed one (`levers9 deploy app.py`) gains a version per
// deploy and serves until stopped. Stopping an app cancels its calls and
// stops its containers.
type App struct{ ent.Schema }

// Mixin of the App.
func (App) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "app"}, TimeMixin{}, TenantMixin{}, EnvironmentMixin{}}
}

// Fields of the App.
func (App) Fields() []ent.Field {
	return []ent.Field{
		field.String("name").NotEmpty().Match(namePattern).Immutable().
			Annotations(entgql.OrderField("NAME")),
		field.Enum("state").Values("RUNNING", "DEPLOYED", "STOPPED").Default("RUNNING").
			Comment("RUNNING: ephemeral, its script runs; DEPLOYED: serves its versions; STOPPED"),
		field.Bool("ephemeral").Default(true).Immutable(),
		field.String("code_hash").
			Comment("SHA-256 of the latest version's code package (each function keeps its own)").
			Annotations(entgql.Skip(entgql.SkipAll)),
		field.String("owner_id").Immutable(),
		field.Time("last_seen_at").Optional().Nillable().
			Comment("the client running an ephemeral app last said it is alive; a silent one's app is stopped").
			Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput, entgql.SkipWhereInput)),
		field.Int("version").Default(1).Comment("the latest version deployed; every deploy adds one"),
		field.Int("live_version").Default(1).
			Comment("the version unversioned URLs and lookups reach: the latest, or the one rolled back to"),
		field.Time("stopped_at").Optional().Nillable(),
		field.String("stop_reason").Default(""),
	}
}

// Edges of the App.
func (App) Edges() []ent.Edge {
	return []ent.Edge{
		edge.To("owner", User.Type).Field("owner_id").Unique().Required().Immutable(),
		edge.To("functions", Function.Type),
	}
}

// Indexes of the App.
func (App) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("tenant_id", "environment_id", "created_at"),
		index.Fields("tenant_id", "environment_id", "name", "state"),
		// The functions' periodic check looks for apps not stopped.
		index.Fields("state"),
		// One deployed app per name in an environment, even when two
		// first deploys race.
		index.Fields("tenant_id", "environment_id", "name").Unique().
			Annotations(entsql.IndexWhere("state = 'DEPLOYED'")),
	}
}

// Annotations of the App.
func (App) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.RelayConnection(), entgql.QueryField("apps")}
}

// Policy of the App: members read the tenant's apps; only their owner or
// an admin changes one.
func (App) Policy() ent.Policy {
	return privacy.Policy{Mutation: privacy.MutationPolicy{rule.FilterSelfUnlessAdmin("owner_id")}}
}
