package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"github.com/levers9/levers9/ent/privacy"
	"github.com/levers9/levers9/ent/schema/rule"
)

// APIToken lets the CLI, SDK and scripts act as a user in one tenant and
// environment. Only a hash of the secret is stored.
type APIToken struct{ ent.Schema }

// Mixin of the APIToken.
func (APIToken) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "tok"}, TimeMixin{}}
}

// Fields of the APIToken.
func (APIToken) Fields() []ent.Field {
	return []ent.Field{
		field.String("name").NotEmpty().MaxLen(200).
			Annotations(entgql.OrderField("NAME")),
		field.Enum("kind").NamedValues("API", "API", "Session", "SESSION").Default("API").Immutable().
			Comment("API tokens are made by users; sessions by signing in"),
		field.String("token_hash").Sensitive().Unique().Immutable().
			Annotations(entgql.Skip(entgql.SkipAll)),
		field.String("hint").Immutable().
			Comment("the first characters of the secret, to tell tokens apart"),
		field.String("user_id").Immutable(),
		field.String("tenant_id").Optional().
			Annotations(entgql.Skip(entgql.SkipAll)).
			Comment("empty for a superadmin outside every tenant; set by enterTenant"),
		field.String("environment_id").Optional().
			Annotations(entgql.Skip(entgql.SkipAll)),
		field.Bool("entered").Default(false).Immutable().
			Comment("made by a superadmin inside a tenant they entered; revoked when they leave"),
		field.Time("last_used_at").Optional().Nillable(),
		field.Time("expires_at").Optional().Nillable().Immutable(),
		field.Time("revoked_at").Optional().Nillable(),
	}
}

// Edges of the APIToken.
func (APIToken) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("user", User.Type).Ref("api_tokens").Field("user_id").Unique().Required().Immutable(),
	}
}

// Annotations of the APIToken.
func (APIToken) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entgql.RelayConnection(),
		entgql.QueryField("apiTokens"),
	}
}

// Policy of the APIToken: a user sees and revokes only their own tokens.
func (APIToken) Policy() ent.Policy {
	return privacy.Policy{
		Query:    privacy.QueryPolicy{rule.AllowIfSystem(), rule.DenyIfNoViewer(), rule.FilterSelf("user_id")},
		Mutation: privacy.MutationPolicy{rule.AllowIfSystem(), rule.DenyIfNoViewer(), rule.FilterSelf("user_id")},
	}
}
