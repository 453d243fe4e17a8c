package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"github.com/levers9/levers9/internal/inventory"
	"github.com/levers9/levers9/internal/nodes/nodename"
)

// Node is a machine that runs containers, attached through an outbound
// tunnel from its agent. In GraphQL it is ComputeNode, since Relay owns the
// name Node.
type Node struct{ ent.Schema }

// Mixin of the Node.
func (Node) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: "node"}, TimeMixin{}, TenantMixin{}}
}

// Fields of the Node.
func (Node) Fields() []ent.Field {
	return []ent.Field{
		field.String("name").NotEmpty().Match(nodename.Pattern).
			Annotations(entgql.OrderField("NAME")),
		// Liveness belongs to the server (the tunnel and its liveness check):
		// an admin who could set it would fail running jobs without grace.
		field.Enum("status").NamedValues("Online", "ONLINE", "Offline", "OFFLINE").Default("OFFLINE").
			Annotations(entgql.OrderField("STATUS"), entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
		field.Time("last_heartbeat_at").Optional().Nillable().
			Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
		field.Bool("drain").Default(false).
			Comment("a draining node takes no new jobs; running ones finish"),
		field.Strings("labels").Optional().
			Comment("free-form KEY=VALUE labels set by admins"),
		field.JSON("inventory", inventory.Inventory{}).Default(inventory.Inventory{}).
			Annotations(entgql.Type("Inventory"), entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
		field.String("credential_hash").Sensitive().Optional().
			Annotations(entgql.Skip(entgql.SkipAll)),
		field.String("agent_version").Default("").
			Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
		// Relay streams are served by the replica holding the node's
		// stream connection; the others forward to it.
		field.String("stream_replica").Default("").
			Comment("internal URL of the server replica holding the node's stream tunnel; empty when none").
			Annotations(entgql.Skip(entgql.SkipAll)),
	}
}

// Edges of the Node.
func (Node) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("queues", Queue.Type).Ref("nodes"),
		edge.From("services", Service.Type).Ref("node").
			Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
		edge.From("storages", Storage.Type).Ref("node").
			Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
	}
}

// Indexes of the Node.
func (Node) Indexes() []ent.Index {
	return []ent.Index{index.Fields("tenant_id", "name").Unique()}
}

// Annotations of the Node.
func (Node) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entgql.Type("ComputeNode"),
		entgql.RelayConnection(),
		entgql.QueryField("nodes"),
		entgql.Mutations(entgql.MutationUpdate()),
	}
}

// Policy of the Node.
func (Node) Policy() ent.Policy { return adminWrites() }
