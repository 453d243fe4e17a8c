package database

import (
	"regexp"
	"strings"

	"ariga.io/atlas/sql/postgres"
	"ariga.io/atlas/sql/schema"
	entschema "entgo.io/ent/dialect/sql/schema"
)

// samePredicates keeps ent's migration from dropping and re-creating, at
// every start, each PostgreSQL partial index: PostgreSQL prints a stored
// predicate back with casts and parentheses (status = 'PENDING' reads
// ((status)::text = 'PENDING'::text)), which the schema's text never
// equals. A re-created index on jobs costs a full build and blocks writes
// to the table while it runs. An index change is dropped when it is only
// that: an attribute change whose predicates read the same once
// normalised. SQLite keeps the text it was given.
func samePredicates(next entschema.Differ) entschema.Differ {
	return entschema.DiffFunc(func(current, desired *schema.Schema) ([]schema.Change, error) {
		changes, err := next.Diff(current, desired)
		if err != nil {
			return nil, err
		}
		for _, c := range changes {
			t, ok := c.(*schema.ModifyTable)
			if !ok {
				continue
			}
			kept := t.Changes[:0]
			for _, tc := range t.Changes {
				if m, ok := tc.(*schema.ModifyIndex); ok && m.Change == schema.ChangeAttr && samePredicate(m.From.Attrs, m.To.Attrs) {
					continue
				}
				kept = append(kept, tc)
			}
			t.Changes = kept
		}
		return changes, nil
	})
}

// samePredicate reports whether both attribute lists hold a PostgreSQL
// index predicate and the two read the same without casts, parentheses
// and spaces.
func samePredicate(from, to []schema.Attr) bool {
	p1, ok1 := predicate(from)
	p2, ok2 := predicate(to)
	return ok1 && ok2 && normalPredicate(p1) == normalPredicate(p2)
}

func predicate(attrs []schema.Attr) (string, bool) {
	for _, a := range attrs {
		if p, ok := a.(*postgres.IndexPredicate); ok {
			return p.P, true
		}
	}
	return "", false
}

// casts are those PostgreSQL adds to the predicates of our partial
// indexes (string and enum columns are character varying).
var casts = regexp.MustCompile(`::(text|character varying|double precision|bigint|integer|boolean)`)

var unwrap = strings.NewReplacer("(", "", ")", "", " ", "")

func normalPredicate(p string) string {
	return unwrap.Replace(casts.ReplaceAllString(p, ""))
}
