package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"github.com/levers9/levers9/internal/billing"
)

// Storage is where buckets live: an S3 endpoint, a directory on one node,
// or the server's own disk.
type Storage struct{ ent.Schema }

// Mixin of the Storage.
func (Storage) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "sto"}, TimeMixin{}, TenantMixin{}}
}

// Fields of the Storage.
func (Storage) Fields() []ent.Field {
	return []ent.Field{
		field.String("name").NotEmpty().Match(namePattern).
			Annotations(entgql.OrderField("NAME")),
		field.Enum("kind").NamedValues("S3", "S3", "Node", "NODE", "Local", "LOCAL").Immutable(),
		field.String("endpoint").Default("").Comment("S3 endpoint URL"),
		field.String("region").Default(""),
		field.String("s3_bucket").Default("").Comment("S3 bucket holding this storage's buckets as prefixes"),
		field.String("access_key_id").Default(""),
		field.String("secret_access_key").Sensitive().Default("").
			Annotations(entgql.Skip(entgql.SkipType, entgql.SkipWhereInput, entgql.SkipOrderField)),
		// A host path: GraphQL shows it to tenant admins only (rule.HostPath),
		// so members can neither read nor filter by it.
		field.String("path").Default("").Comment("directory for local and node storages").
			Annotations(entgql.Skip(entgql.SkipType, entgql.SkipWhereInput, entgql.SkipOrderField)),
		field.String("node_id").Optional(),
		field.Int64("price_per_tb_hour").GoType(billing.Tokens(0)).Default(0).
			Annotations(entgql.Type("Tokens"), entgql.Skip(entgql.SkipWhereInput)),
	}
}

// Edges of the Storage.
func (Storage) Edges() []ent.Edge {
	return []ent.Edge{
		edge.To("node", Node.Type).Field("node_id").Unique(),
		edge.From("queues", Queue.Type).Ref("storages"),
		edge.From("buckets", Bucket.Type).Ref("storage").
			Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
	}
}

// Indexes of the Storage.
func (Storage) Indexes() []ent.Index {
	return []ent.Index{index.Fields("tenant_id", "name").Unique()}
}

// Annotations of the Storage.
func (Storage) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entgql.RelayConnection(),
		entgql.QueryField("storages"),
		entgql.Mutations(entgql.MutationCreate(), entgql.MutationUpdate()),
	}
}

// Policy of the Storage.
func (Storage) Policy() ent.Policy { return adminWrites() }
