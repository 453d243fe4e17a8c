package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"github.com/levers9/levers9/ent/privacy"
	"github.com/levers9/levers9/ent/schema/rule"
)

// Secret is a set of environment variables kept encrypted in an
// environment and injected only into the containers of functions that
// name it. Its key names are shown; its values never leave the server
// except towards those containers.
type Secret struct{ ent.Schema }

// Mixin of the Secret.
func (Secret) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "sec"}, TimeMixin{}, TenantMixin{}, EnvironmentMixin{}}
}

// Fields of the Secret.
func (Secret) Fields() []ent.Field {
	skip := entgql.Skip(entgql.SkipAll)
	return []ent.Field{
		field.String("name").NotEmpty().Match(namePattern).Immutable().
			Annotations(entgql.OrderField("NAME")),
		field.Strings("keys").Comment("the variables' names, sorted"),
		field.String("owner_id").Immutable(),
		field.Bytes("ciphertext").Sensitive().Comment("AES-GCM sealed JSON of the values").Annotations(skip),
		field.Bytes("nonce").Sensitive().Annotations(skip),
		field.String("key_id").Comment("which server key sealed it (rotation)").Annotations(skip),
	}
}

// Indexes of the Secret.
func (Secret) Indexes() []ent.Index {
	return []ent.Index{index.Fields("tenant_id", "environment_id", "name").Unique()}
}

// Annotations of the Secret.
func (Secret) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.RelayConnection(), entgql.QueryField("secrets")}
}

// Policy of the Secret: members see the environment's secrets by name and
// create their own; only their owner or an admin replaces or deletes one.
func (Secret) Policy() ent.Policy {
	return privacy.Policy{Mutation: privacy.MutationPolicy{rule.FilterSelfUnlessAdmin("owner_id")}}
}
