package model

import (
	"encoding/base64"
	"io"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/levers9/levers9/ent"
)

// keyedCursor is ent.Cursor's text with the sort key always written:
// entgql writes it with omitempty, so the cursor of a row whose key is
// its type's zero value (a job of priority 0, an empty name) lost it, and
// the next page was cut on the ID alone, skipping or repeating rows.
// ent.Cursor reads both texts.
type keyedCursor struct {
	ID    string    `msgpack:"i"`
	Value ent.Value `msgpack:"v"`
}

// MarshalCursor writes the GraphQL Cursor scalar.
func MarshalCursor(c ent.Cursor) graphql.Marshaler {
	if c.Value == nil { // ordered by ID: entgql's own text
		return c
	}
	return graphql.WriterFunc(func(w io.Writer) {
		_, _ = io.WriteString(w, `"`)
		wc := base64.NewEncoder(base64.RawStdEncoding, w)
		_ = msgpack.NewEncoder(wc).Encode(keyedCursor{ID: c.ID, Value: c.Value})
		_ = wc.Close()
		_, _ = io.WriteString(w, `"`)
	})
}

// UnmarshalCursor reads the GraphQL Cursor scalar.
func UnmarshalCursor(v any) (ent.Cursor, error) {
	var c ent.Cursor
	err := c.UnmarshalGQL(v)
	return c, err
}
