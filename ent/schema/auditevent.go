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

// AuditEvent records an action that must be traceable, such as a superadmin
// entering a tenant. Rows are never changed.
type AuditEvent struct{ ent.Schema }

// Mixin of the AuditEvent.
func (AuditEvent) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "aud"}, TimeMixin{}}
}

// Fields of the AuditEvent.
func (AuditEvent) Fields() []ent.Field {
	return []ent.Field{
		field.String("tenant_id").Optional().Immutable().
			Annotations(entgql.Skip(entgql.SkipAll)),
		field.String("actor_id").Immutable(),
		field.String("action").NotEmpty().Immutable(),
		field.String("target").Default("").Immutable(),
		field.JSON("details", map[string]string{}).Optional().Immutable().
			Annotations(entgql.Skip(entgql.SkipAll)),
	}
}

// Indexes of the AuditEvent.
func (AuditEvent) Indexes() []ent.Index {
	return []ent.Index{index.Fields("tenant_id", "created_at")}
}

// Annotations of the AuditEvent.
func (AuditEvent) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entgql.RelayConnection(),
		entgql.QueryField("auditEvents"),
	}
}

// Policy of the AuditEvent: written by internal work only, never changed;
// tenant admins (and superadmins inside the tenant) read the tenant's.
func (AuditEvent) Policy() ent.Policy {
	return privacy.Policy{
		Query: privacy.QueryPolicy{
			rule.AllowIfSystem(), rule.DenyIfNoViewer(), rule.AdminOnly(), rule.FilterTenant(),
		},
		Mutation: privacy.MutationPolicy{
			privacy.DenyMutationOperationRule(ent.OpUpdate | ent.OpUpdateOne | ent.OpDelete | ent.OpDeleteOne),
			rule.AllowIfSystem(), rule.DenyAll(),
		},
	}
}
