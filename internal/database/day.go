package database

import "entgo.io/ent/dialect"

// DayLayout is how DayOf writes a day, as Go's time layout.
const DayLayout = "2006-01-02"

// DayOf is the SQL expression of the UTC day ("2026-12-02", DayLayout) of
// the time column col (already quoted or qualified), on dialect d, for
// grouping rows by day in the database instead of reading every row.
// SQLite stores times as sortable text in UTC (see openSQLite), so the day
// is the text's first ten characters.
func DayOf(d, col string) string {
	if d == dialect.Postgres {
		return "to_char(" + col + " AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
	}
	return "substr(" + col + ", 1, 10)"
}
