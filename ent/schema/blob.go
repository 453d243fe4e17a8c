package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// Blob records that a tenant holds a content-addressed object in the
// server's blob storage (code packages, large arguments and results). The
// bytes live in storage under the tenant; this row is who may read them.
type Blob struct{ ent.Schema }

// Mixin of the Blob.
func (Blob) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "blob"}, TimeMixin{}, TenantMixin{}}
}

// Fields of the Blob.
func (Blob) Fields() []ent.Field {
	return []ent.Field{
		field.String("hash").Immutable().Comment("hex SHA-256 of the content"),
		field.Int64("size").Immutable(),
		field.String("kind").Immutable().Comment("code or payload"),
	}
}

// Indexes of the Blob.
func (Blob) Indexes() []ent.Index {
	return []ent.Index{index.Fields("tenant_id", "hash").Unique()}
}

// Annotations of the Blob: not part of the GraphQL API.
func (Blob) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.Skip(entgql.SkipAll)}
}
