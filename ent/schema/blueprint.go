package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"github.com/levers9/levers9/ent/privacy"
	"github.com/levers9/levers9/ent/schema/rule"
	"github.com/levers9/levers9/internal/wire"
)

// Blueprint is what is installed in a container, declared as steps and
// built once per tenant and key: every function, sandbox and box that asks
// for the same steps reuses it. A snapshot of a sandbox is a blueprint
// too, with a key of its own.
type Blueprint struct{ ent.Schema }

// Mixin of the Blueprint.
func (Blueprint) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "bp"}, TimeMixin{}, TenantMixin{}}
}

// Fields of the Blueprint.
func (Blueprint) Fields() []ent.Field {
	noInput := entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)
	return []ent.Field{
		field.String("key").NotEmpty().Immutable().Comment("the last step's key"),
		field.String("first_key").Default("").Immutable().Comment("the first step's key: builds look for cached prefixes by it").
			Annotations(entgql.Skip(entgql.SkipAll)),
		field.JSON("steps", []wire.BuildStep{}).Immutable().Comment("the steps, each with its key").
			Annotations(entgql.Skip(entgql.SkipAll)),
		field.String("image").NotEmpty().Immutable().Comment("the image reference containers run: levers9-bp/TENANT:KEY"),
		field.Enum("source").Values("BUILD", "SNAPSHOT").Default("BUILD").Immutable(),
		field.Enum("state").Values("BUILDING", "READY", "FAILED").Default("BUILDING").Annotations(noInput),
		field.String("failure").Default("").Annotations(noInput),
		field.String("owner_id").Immutable(),
		field.String("build_job_id").Optional().Comment("the job that builds it (or the sandbox a snapshot was taken of)").Annotations(noInput),
		field.Int("steps_built").Default(0).Comment("steps the last build ran; the others were cached").Annotations(noInput),
		field.String("export_blob").Default("").Comment("content address of the exported image in blob storage").
			Annotations(entgql.Skip(entgql.SkipAll)),
		field.Int64("export_bytes").Default(0).Annotations(noInput),
		field.Strings("nodes").Optional().Comment("nodes known to hold the image; placement prefers them").
			Annotations(entgql.Skip(entgql.SkipAll)),
		field.Time("ready_at").Optional().Nillable().Annotations(noInput),
	}
}

// Indexes of the Blueprint.
func (Blueprint) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("tenant_id", "key").Unique(),
		index.Fields("tenant_id", "first_key"),
		index.Fields("image"),
	}
}

// Annotations of the Blueprint.
func (Blueprint) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.RelayConnection(), entgql.QueryField("blueprints")}
}

// Policy of the Blueprint: the tenant's members see its blueprints and
// build with them; only the owner or an admin changes one.
func (Blueprint) Policy() ent.Policy {
	return privacy.Policy{Mutation: privacy.MutationPolicy{rule.FilterSelfUnlessAdmin("owner_id")}}
}
