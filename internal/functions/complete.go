package functions

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"entgo.io/ent/dialect"
)

// completion is a call that returned, as settle records it.
type completion struct {
	id                string
	attempt           int
	data              []byte
	blob              string
	started, finished time.Time
}

// completeBatch records calls that returned in one statement (calls are
// many and their results differ, so an UPDATE per call would cost a round
// trip each), for container ctr's running attempts only. It returns the
// map of each call it moved ("" for a call outside a map).
func completeBatch(ctx context.Context, tx *sql.Tx, dia, ctr string, cs []completion, now time.Time) (map[string]string, error) {
	moved := make(map[string]string, len(cs))
	const chunk = 200 // 6 parameters a row, far under both databases' limits
	for lo := 0; lo < len(cs); lo += chunk {
		part := cs[lo:min(lo+chunk, len(cs))]
		var b strings.Builder
		args := make([]any, 0, 2+6*len(part))
		n := 0
		arg := func(v any, pgType string) string {
			args = append(args, v)
			n++
			if dia == dialect.Postgres {
				return fmt.Sprintf("CAST($%d AS %s)", n, pgType)
			}
			return "?"
		}
		b.WriteString("UPDATE tasks SET state = 'COMPLETE', result = v.column2, result_blob = v.column3, ")
		b.WriteString("started_at = v.column4, finished_at = v.column5, deadline = NULL, ")
		b.WriteString("error_kind = '', error_message = '', error_traceback = '', error_exception = NULL, ")
		b.WriteString("updated_at = " + arg(now, "timestamptz") + " FROM (VALUES ")
		for i, c := range part {
			if i > 0 {
				b.WriteString(", ")
			}
			var data any
			if c.blob == "" {
				data = c.data
				if c.data == nil {
					data = []byte{}
				}
			}
			fmt.Fprintf(&b, "(%s, %s, %s, %s, %s, %s)",
				arg(c.id, "text"), arg(data, "bytea"), arg(c.blob, "text"),
				arg(c.started, "timestamptz"), arg(c.finished, "timestamptz"), arg(c.attempt, "bigint"))
		}
		b.WriteString(") AS v WHERE tasks.id = v.column1 AND tasks.state = 'RUNNING' AND tasks.attempt = v.column6 AND tasks.container_id = ")
		b.WriteString(arg(ctr, "text"))
		b.WriteString(" RETURNING tasks.id, tasks.map_id")
		rows, err := tx.QueryContext(ctx, b.String(), args...)
		if err != nil {
			return nil, fmt.Errorf("recording %d results: %w", len(part), err)
		}
		for rows.Next() {
			var id string
			var m sql.NullString
			if err := rows.Scan(&id, &m); err != nil {
				rows.Close()
				return nil, fmt.Errorf("recording results: %w", err)
			}
			moved[id] = m.String
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("recording results: %w", err)
		}
	}
	return moved, nil
}
