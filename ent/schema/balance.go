package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
	"github.com/levers9/levers9/ent/privacy"
	"github.com/levers9/levers9/ent/schema/rule"

	"github.com/levers9/levers9/internal/billing"
)

// Balance is the running sum of one payer's charges: what the ledger would
// otherwise sum over every charge the payer ever had, on every priced
// submission and every minute of the meter. The database keeps it: a
// trigger on charges adds each inserted charge to its payer's row, in the
// inserting transaction (internal/database/balances.go), so no writer can
// forget it and a charge skipped as a duplicate adds nothing.
type Balance struct{ ent.Schema }

// Mixin of the Balance. Rows are read by ID only.
func (Balance) Mixin() []ent.Mixin {
	return []ent.Mixin{TenantMixin{Unindexed: true}}
}

// Fields of the Balance.
func (Balance) Fields() []ent.Field {
	return []ent.Field{
		field.String("id").Immutable().NotEmpty().
			Comment("the payer's key: tenant ID, '/', then the project's or user's ID (database.BalanceKey)"),
		field.Enum("payer_kind").NamedValues("User", "USER", "Project", "PROJECT").Immutable(),
		field.String("payer_id").Immutable().NotEmpty().
			Comment("the paying project's or user's ID"),
		field.Int64("tokens").GoType(billing.Tokens(0)).
			Comment("the sum of the payer's charges: spent minus granted, so minus the balance"),
	}
}

// Annotations of the Balance: read through the ledger, not the API.
func (Balance) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.Skip(entgql.SkipAll)}
}

// Policy of the Balance: only the database's trigger writes it.
func (Balance) Policy() ent.Policy {
	return privacy.Policy{
		Mutation: privacy.MutationPolicy{rule.DenyAll()},
	}
}
