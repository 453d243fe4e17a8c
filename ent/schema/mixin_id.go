package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/mixin"

	"github.com/levers9/levers9/internal/ids"
)

// IDMixin gives an entity an opaque, time-ordered ID with a type prefix.
type IDMixin struct {
	mixin.Schema
	Prefix string
}

// Fields of the IDMixin.
func (m IDMixin) Fields() []ent.Field {
	prefix := m.Prefix
	return []ent.Field{
		field.String("id").
			Immutable().
			NotEmpty().
			MaxLen(40).
			DefaultFunc(func() string { return ids.New(prefix) }).
			Annotations(entgql.OrderField("ID")),
	}
}
