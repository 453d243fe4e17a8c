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

	"github.com/levers9/levers9/internal/billing"
)

// Charge is one immutable row of the token ledger. Its idempotency key is
// unique, so a retried or duplicated writer can never charge twice.
type Charge struct{ ent.Schema }

// Mixin of the Charge.
func (Charge) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "chg"}, TimeMixin{}, TenantMixin{}}
}

// Fields of the Charge.
func (Charge) Fields() []ent.Field {
	return []ent.Field{
		field.Enum("payer_kind").NamedValues("User", "USER", "Project", "PROJECT").Immutable(),
		field.String("user_id").Optional().Immutable().
			Comment("the paying user, or for project charges the user whose job it was"),
		field.String("project_id").Optional().Immutable(),
		field.String("job_id").Optional().Immutable(),
		field.String("bucket_id").Optional().Immutable(),
		field.Enum("kind").NamedValues("Start", "START", "Compute", "COMPUTE", "Storage", "STORAGE", "Grant", "GRANT", "Adjustment", "ADJUSTMENT").Immutable(),
		field.Int64("tokens").GoType(billing.Tokens(0)).Immutable().
			Comment("positive spends tokens; grants are negative charges").
			Annotations(entgql.Type("Tokens"), entgql.Skip(entgql.SkipWhereInput)),
		field.JSON("rates", billing.Rates{}).Optional().Immutable().
			Comment("the prices used, copied so later changes never rewrite history").
			Annotations(entgql.Skip(entgql.SkipAll)),
		field.Time("period_start").Optional().Nillable().Immutable(),
		field.Time("period_end").Optional().Nillable().Immutable(),
		field.String("reason").Default("").Immutable(),
		field.String("idempotency_key").Unique().Immutable().
			Annotations(entgql.Skip(entgql.SkipAll)),
	}
}

// Edges of the Charge.
func (Charge) Edges() []ent.Edge {
	return []ent.Edge{
		edge.To("user", User.Type).Field("user_id").Unique().Immutable(),
		edge.To("project", Project.Type).Field("project_id").Unique().Immutable(),
		edge.To("job", Job.Type).Field("job_id").Unique().Immutable(),
	}
}

// Indexes of the Charge.
func (Charge) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("tenant_id", "created_at"),
		index.Fields("job_id"),
		index.Fields("project_id"),
		index.Fields("user_id"),
		index.Fields("bucket_id"),
	}
}

// Annotations of the Charge.
func (Charge) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entgql.RelayConnection(),
		entgql.QueryField("charges"),
	}
}

// Policy of the Charge: members see their own charges, admins the tenant's;
// the ledger is written by internal work only.
func (Charge) Policy() ent.Policy {
	return privacy.Policy{
		Query:    privacy.QueryPolicy{rule.FilterSelfUnlessAdmin("user_id")},
		Mutation: privacy.MutationPolicy{rule.DenyAll()},
	}
}
