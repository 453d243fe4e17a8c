package database_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
)

// HistoryReads flags a plan that reads a history table whole, or through
// a range only an owner's key narrows, and passes lookups by the row's or
// the job's key, or by an owner with a live status.
func TestHistoryReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := open(t, dbtest.SQLiteURL(t))
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query, flagged string // flagged: a step's start, or "" for none
	}{
		{"SELECT * FROM jobs WHERE name = ?", "SCAN jobs"},
		{"SELECT count(*) FROM services", "SCAN services"},
		// The job-end query as it was: the union's merge wants queue IDs in
		// order, so the join ran from queue_nodes and read every service
		// the node ever ran.
		{"SELECT queue_id FROM jobs WHERE id = $1 UNION SELECT qn.queue_id FROM queue_nodes qn JOIN services s ON s.node_id = qn.node_id WHERE s.job_id = $1",
			"SEARCH s USING INDEX service_node_id_status (node_id=?)"},
		{"SELECT queue_id FROM queue_nodes WHERE node_id IN (SELECT node_id FROM services WHERE job_id = ?)", ""},
		{"SELECT * FROM jobs WHERE id = ?", ""},
		// A range narrows nothing: a first page reads every row.
		{"SELECT id FROM jobs WHERE id > ? ORDER BY id LIMIT 10", "SEARCH jobs USING COVERING INDEX sqlite_autoindex_jobs_1 (id>?)"},
		// "NOT c" finds no index, "c = false" does.
		{"SELECT id FROM jobs WHERE NOT metering_closed AND started_at IS NOT NULL", "SCAN jobs"},
		{"SELECT id FROM jobs WHERE metering_closed = false AND started_at IS NOT NULL", ""},
		{"UPDATE services SET status = 'COMPLETE' WHERE job_id = ? AND name = ?", ""},
		{"SELECT job_id FROM services WHERE node_id = ? AND status IN (?, ?)", ""},
		{"SELECT * FROM queue_nodes", ""}, // not a history table
		{"-- name: Insert :one\nINSERT INTO river_job (kind, args) VALUES (?1, ?2)", ""},
	} {
		reads, err := db.HistoryReads(ctx, tc.query)
		if err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		hit := slices.ContainsFunc(reads, func(r string) bool { return tc.flagged != "" && strings.HasPrefix(r, tc.flagged) })
		if (tc.flagged == "") != (len(reads) == 0) || (tc.flagged != "" && !hit) {
			t.Errorf("%s: flagged %q, want %q", tc.query, reads, tc.flagged)
		}
	}
}

// Mark lists the statements run since, and not those before.
func TestMark(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := open(t, dbtest.SQLiteURL(t))
	if _, err := db.SQL.ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	since, err := db.Mark(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"SELECT 2", "SELECT 3", "SELECT 2"} {
		if _, err := db.SQL.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	got, err := since(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"SELECT 2", "SELECT 3"}) {
		t.Fatalf("since = %q, want the two run since, most recent first", got)
	}
}

// Optimize gathers the planner's statistics of tables that grew since the
// database was opened empty (SQLite), and is a no-op on PostgreSQL.
func TestOptimize(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := open(t, url)
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := db.SQL.ExecContext(ctx, "CREATE TABLE grown (id INTEGER PRIMARY KEY, k TEXT)"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.SQL.ExecContext(ctx, "CREATE INDEX grown_k ON grown (k)"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.SQL.ExecContext(ctx, `INSERT INTO grown (id, k) SELECT n, 'k' || (n % 100) FROM (
			WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5000) SELECT n FROM c) AS s`); err != nil {
			t.Fatal(err)
		}
		// The connection must have used the table for SQLite to consider it.
		if _, err := db.SQL.ExecContext(ctx, "SELECT id FROM grown WHERE k = 'k1'"); err != nil {
			t.Fatal(err)
		}
		if err := db.Optimize(ctx); err != nil {
			t.Fatal(err)
		}
		if db.Dialect != "sqlite" {
			return
		}
		var n int
		if err := db.SQL.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_stat1 WHERE tbl = 'grown'").Scan(&n); err != nil {
			t.Fatalf("no statistics gathered: %v", err)
		}
		if n == 0 {
			t.Fatal("no statistics gathered for the grown table")
		}
	})
}
