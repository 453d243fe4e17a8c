package database

import (
	"context"
	"fmt"
	"strings"
	"time"

	"entgo.io/ent/dialect/sql/schema"
	"entgo.io/ent/schema/field"
)

// legacyTimeLayouts are Go's time.String() without the monotonic clock
// reading: the text SQLite rows held before times were written in the
// sortable format (see openSQLite). A zone without a name is written
// as its offset twice.
var legacyTimeLayouts = []string{
	"2006-01-02 15:04:05.999999999 -0700 MST",
	"2006-01-02 15:04:05.999999999 -0700 -0700",
}

// timeBatch is how many rows of another zone than UTC migrateTimes
// rewrites per transaction.
const timeBatch = 500

// timeColumn is one time column of an ent table.
type timeColumn struct{ table, column string }

// timeColumns lists the time columns of tables: every one ent made, so a
// new table or field is covered without listing it here.
func timeColumns(tables []*schema.Table) []timeColumn {
	var cols []timeColumn
	for _, t := range tables {
		for _, c := range t.Columns {
			if c.Type == field.TypeTime {
				cols = append(cols, timeColumn{t.Name, c.Name})
			}
		}
	}
	return cols
}

// timesRewritten is the SQLite user_version from which every stored time
// is in the sortable format: rows are only written that way since, so the
// tables are searched for legacy text once, not at every start.
const timesRewritten = 1

// migrateTimes rewrites, on SQLite, the times of cols still in the legacy
// text into the sortable format. The legacy text is the only one with two
// spaces ("date time ±zone NAME"), so rows already rewritten are left
// alone and an interrupted run is finished by the next.
func (db *DB) migrateTimes(ctx context.Context, cols []timeColumn) error {
	var version int
	if err := db.SQL.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("reading the SQLite user_version: %w", err)
	}
	if version >= timesRewritten {
		return nil
	}
	for _, c := range cols {
		n, err := db.migrateTimeColumn(ctx, c)
		if err != nil {
			return fmt.Errorf("rewriting the times of %s.%s: %w", c.table, c.column, err)
		}
		if n > 0 {
			db.log.Info("rewrote times in the sortable format", "table", c.table, "column", c.column, "rows", n)
		}
	}
	if _, err := db.SQL.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", timesRewritten)); err != nil {
		return fmt.Errorf("setting the SQLite user_version: %w", err)
	}
	return nil
}

func (db *DB) migrateTimeColumn(ctx context.Context, c timeColumn) (int64, error) {
	// Rows written in UTC (nearly all) are fixed by one statement: both
	// texts write the fraction the same way, only the zone differs.
	res, err := db.SQL.ExecContext(ctx, fmt.Sprintf(
		`UPDATE %[1]q SET %[2]q = substr(%[2]q, 1, instr(%[2]q, ' +0000 UTC') - 1) || '+00:00' WHERE %[2]q LIKE '%% +0000 UTC%%'`,
		c.table, c.column))
	if err != nil {
		return 0, err
	}
	total, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	// Rows written in another zone are read as times and written back,
	// which converts them to UTC; batches go on in rowid order from where
	// the last one ended, so the table is read once.
	after := int64(-1 << 63)
	for {
		n, last, err := db.migrateTimeBatch(ctx, c, after)
		if err != nil {
			return total, err
		}
		total += n
		if n < timeBatch {
			return total, nil
		}
		after = last
	}
}

// migrateTimeBatch rewrites the first timeBatch legacy times of c after
// rowid after, and returns how many it rewrote and the last one's rowid.
func (db *DB) migrateTimeBatch(ctx context.Context, c timeColumn, after int64) (int64, int64, error) {
	type row struct {
		rowid int64
		t     time.Time
	}
	var batch []row
	err := db.InTx(ctx, func(tx *Tx) error {
		rows, err := tx.SQL.QueryContext(ctx, fmt.Sprintf(
			`SELECT rowid, %[2]q FROM %[1]q WHERE rowid > ? AND %[2]q LIKE '%% %% %%' ORDER BY rowid LIMIT %[3]d`,
			c.table, c.column, timeBatch), after)
		if err != nil {
			return err
		}
		for rows.Next() {
			var r row
			var v any
			if err := rows.Scan(&r.rowid, &v); err != nil {
				rows.Close()
				return err
			}
			if r.t, err = legacyTime(v); err != nil {
				rows.Close()
				return fmt.Errorf("row %d: %w", r.rowid, err)
			}
			batch = append(batch, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, r := range batch {
			if _, err := tx.SQL.ExecContext(ctx, fmt.Sprintf(`UPDATE %q SET %q = ? WHERE rowid = ?`, c.table, c.column), r.t, r.rowid); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || len(batch) == 0 {
		return 0, after, err
	}
	return int64(len(batch)), batch[len(batch)-1].rowid, nil
}

// legacyTime is the time v holds: the driver parses the legacy text of a
// datetime column itself; a value it left as text is parsed here.
func legacyTime(v any) (time.Time, error) {
	switch v := v.(type) {
	case time.Time:
		return v, nil
	case string:
		s := v
		if i := strings.Index(s, " m="); i >= 0 {
			s = s[:i]
		}
		for _, layout := range legacyTimeLayouts {
			if t, err := time.Parse(layout, s); err == nil {
				return t, nil
			}
		}
		return time.Time{}, fmt.Errorf("unreadable time %q", v)
	default:
		return time.Time{}, fmt.Errorf("unreadable time %v (%T)", v, v)
	}
}
