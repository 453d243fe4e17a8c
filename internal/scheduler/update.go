package scheduler

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"entgo.io/ent/dialect"
)

// column is a column to set; cast, when set, is the SQL type its values
// are cast to (they are bound as text).
type column struct{ name, cast string }

func cols(names ...string) []column {
	out := make([]column, len(names))
	for i, n := range names {
		out[i].name = n
	}
	return out
}

// row is the new values of one row's columns: strings, or nil for NULL.
type row struct {
	id   string
	vals []any
}

// sqliteRows bounds the rows of one SQLite statement: four values a row
// stay far below its parameter limit.
const sqliteRows = 500

// update sets cols of rows by ID where cond holds (cond names the table's
// columns unqualified), and updated_at, joining the table to the new values
// by ID; it returns how many rows changed. On PostgreSQL that is one
// statement for all rows, the values bound as one array per column
// (unnest), so its text and plan do not depend on the row count; on SQLite
// one UPDATE … FROM (VALUES …) per sqliteRows rows.
func update(ctx context.Context, tx *sql.Tx, dialectName, table, cond string, cols []column, rows []row, now time.Time) (int, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	// In ID order (IDs grow with time: about the order the rows were
	// inserted in), so the updates walk the table and its indexes in order
	// instead of at random, and every pass takes the row locks in one order.
	rows = slices.SortedFunc(slices.Values(rows), func(a, b row) int { return strings.Compare(a.id, b.id) })
	if dialectName == dialect.Postgres {
		return updatePostgres(ctx, tx, table, cond, cols, rows, now)
	}
	total := 0
	for part := range slices.Chunk(rows, sqliteRows) {
		n, err := updateValues(ctx, tx, table, cond, cols, part, now)
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

func updatePostgres(ctx context.Context, tx *sql.Tx, table, cond string, cols []column, rows []row, now time.Time) (int, error) {
	ids := make([]string, len(rows))
	vals := make([][]*string, len(cols))
	for c := range cols {
		vals[c] = make([]*string, len(rows))
	}
	for i, r := range rows {
		ids[i] = r.id
		for c := range cols {
			v, err := text(r.vals[c])
			if err != nil {
				return 0, fmt.Errorf("%s of %s: %w", cols[c].name, r.id, err)
			}
			vals[c][i] = v
		}
	}
	args := []any{now, ids}
	set := make([]string, len(cols))
	arrays := []string{"$2::text[]"}
	names := []string{"v_id"}
	for c, col := range cols {
		args = append(args, vals[c])
		arrays = append(arrays, fmt.Sprintf("$%d::text[]", len(args)))
		names = append(names, fmt.Sprintf("v_%d", c))
		set[c] = fmt.Sprintf("%s = %s", col.name, cast(names[c+1], col.cast))
	}
	q := fmt.Sprintf("UPDATE %s SET %s, updated_at = $1 FROM unnest(%s) AS v(%s) WHERE %s.id = v.v_id AND %s",
		table, strings.Join(set, ", "), strings.Join(arrays, ", "), strings.Join(names, ", "), table, cond)
	return exec(ctx, tx, q, args)
}

// updateValues is one UPDATE … FROM (VALUES …) statement. SQLite names the
// VALUES columns column1, column2, …. Its parameters are positional (?):
// SQLite looks numbered ones ($N) up by name in a list, once when parsing
// and once when binding each, which made a 2,000-parameter statement cost
// more than its rows.
func updateValues(ctx context.Context, tx *sql.Tx, table, cond string, cols []column, rows []row, now time.Time) (int, error) {
	args := make([]any, 0, 1+len(rows)*(1+len(cols)))
	args = append(args, now)
	tuple := "(?" + strings.Repeat(", ?", len(cols)) + ")"
	var tuples strings.Builder
	for i, r := range rows {
		if i > 0 {
			tuples.WriteString(", ")
		}
		tuples.WriteString(tuple)
		args = append(args, r.id)
		for c := range cols {
			v, err := text(r.vals[c])
			if err != nil {
				return 0, fmt.Errorf("%s of %s: %w", cols[c].name, r.id, err)
			}
			if v == nil {
				args = append(args, nil)
			} else {
				args = append(args, *v)
			}
		}
	}
	set := make([]string, len(cols))
	for c, col := range cols {
		set[c] = fmt.Sprintf("%s = %s", col.name, cast(fmt.Sprintf("v.column%d", c+2), col.cast))
	}
	// The first ? (updated_at) comes first in the text too: positional
	// parameters bind in the order they appear.
	q := fmt.Sprintf("UPDATE %s SET %s, updated_at = ? FROM (VALUES %s) AS v WHERE %s.id = v.column1 AND %s",
		table, strings.Join(set, ", "), tuples.String(), table, cond)
	return exec(ctx, tx, q, args)
}

func cast(expr, typ string) string {
	if typ == "" {
		return expr
	}
	return fmt.Sprintf("CAST(%s AS %s)", expr, typ)
}

// text is v as bound text: a string, or nil for NULL.
func text(v any) (*string, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		return &v, nil
	default:
		return nil, fmt.Errorf("value of type %T, want a string or nil", v)
	}
}

func exec(ctx context.Context, tx *sql.Tx, q string, args []any) (int, error) {
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	return int(n), nil
}
