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

// Bucket is a named folder on a storage, mountable into jobs.
type Bucket struct{ ent.Schema }

// Mixin of the Bucket.
func (Bucket) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "bkt"}, TimeMixin{}, TenantMixin{}}
}

// Fields of the Bucket.
func (Bucket) Fields() []ent.Field {
	return []ent.Field{
		field.String("name").Match(bucketPattern).Immutable().
			Annotations(entgql.OrderField("NAME")),
		field.String("storage_id").Immutable(),
		field.Int64("size_bytes").Default(0).
			Comment("bytes stored, as the storage layer last reported").
			Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
		field.String("project_id").Optional().
			Comment("the project paying for storage; else the owner pays"),
		field.String("owner_id").Immutable().
			Comment("the user who created the bucket").
			Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
		field.Int64("metered_hour").Default(0).
			Comment("storage is charged for every hour before this one (hours since the Unix epoch)").
			Annotations(entgql.Skip(entgql.SkipAll)),
	}
}

// Edges of the Bucket.
func (Bucket) Edges() []ent.Edge {
	return []ent.Edge{
		edge.To("storage", Storage.Type).Field("storage_id").Unique().Required().Immutable(),
		edge.To("read_groups", Group.Type),
		edge.To("write_groups", Group.Type),
		edge.To("project", Project.Type).Field("project_id").Unique(),
	}
}

// Indexes of the Bucket.
func (Bucket) Indexes() []ent.Index {
	return []ent.Index{index.Fields("tenant_id", "name").Unique()}
}

// Annotations of the Bucket.
func (Bucket) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entgql.RelayConnection(),
		entgql.QueryField("buckets"),
		entgql.Mutations(entgql.MutationCreate(), entgql.MutationUpdate()),
	}
}

// Policy of the Bucket: admins create buckets and own what they create.
func (Bucket) Policy() ent.Policy {
	return privacy.Policy{Mutation: privacy.MutationPolicy{rule.AdminOnly(), rule.StampCreator("owner_id")}}
}
