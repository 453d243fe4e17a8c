package model_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/graph/model"
)

// A cursor's sort key survives its text, zero values included (entgql's
// own text drops them), and the default order's cursor keeps no key.
func TestCursorKeepsZeroKey(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 13, 32, 12, 123456789, time.UTC)
	for _, tc := range []struct {
		name  string
		value ent.Value
	}{
		{"zero int", 0}, {"int", 3}, {"empty string", ""}, {"string", "train"},
		{"false", false}, {"time", at}, {"no key", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			model.MarshalCursor(ent.Cursor{ID: "job_1", Value: tc.value}).MarshalGQL(&b)
			c, err := model.UnmarshalCursor(strings.Trim(b.String(), `"`))
			if err != nil {
				t.Fatal(err)
			}
			if c.ID != "job_1" || !same(c.Value, tc.value) {
				t.Fatalf("cursor %q reads back as %#v, want value %#v", b.String(), c, tc.value)
			}
		})
	}
}

// same compares a key with its decoded form: msgpack gives back the
// smallest integer type and times in the local zone.
func same(got, want ent.Value) bool {
	switch w := want.(type) {
	case nil:
		return got == nil
	case int:
		switch g := got.(type) {
		case int8:
			return int(g) == w
		case int64:
			return int(g) == w
		}
		return false
	case time.Time:
		g, ok := got.(time.Time)
		return ok && g.Equal(w)
	default:
		return got == want
	}
}
