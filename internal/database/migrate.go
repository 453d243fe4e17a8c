package database

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"entgo.io/ent/dialect"
	entschema "entgo.io/ent/dialect/sql/schema"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/migrate"
)

// migrationLock is the PostgreSQL advisory lock key of Exclusive.
const migrationLock = 0x6c7639 // "lv9"

// Exclusive runs fn while holding an installation-wide lock: on PostgreSQL
// an advisory lock, so replicas starting together take turns at migrating
// and seeding; on SQLite a single process owns the file anyway.
func (db *DB) Exclusive(ctx context.Context, fn func() error) error {
	if db.Dialect != dialect.Postgres {
		return fn()
	}
	conn, err := db.SQL.Conn(ctx)
	if err != nil {
		return fmt.Errorf("taking the start-up lock: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", migrationLock); err != nil {
		return fmt.Errorf("taking the start-up lock: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrationLock) //nolint:errcheck
	return fn()
}

// schemaMu serialises ent migrations within the process: ent rewrites the
// package-level table descriptions of ent/migrate while it migrates, so two
// databases migrated at once (tests, Exclusive being per database) race.
var schemaMu sync.Mutex

// Migrate brings the ent schema and River's tables up to date. Run it inside
// Exclusive when several replicas may start at once.
func (db *DB) Migrate(ctx context.Context) error {
	schemaMu.Lock()
	err := db.Ent.Schema.Create(ctx, entschema.WithDiffHook(samePredicates))
	times := timeColumns(migrate.Tables)
	schemaMu.Unlock()
	if err != nil {
		return fmt.Errorf("migrating the levers9 schema: %w", err)
	}
	if db.Dialect == dialect.SQLite {
		if err := db.migrateTimes(ctx, times); err != nil {
			return err
		}
	}
	if err := db.keepBalances(ctx); err != nil {
		return err
	}
	if err := db.fillSmallestRequests(ctx); err != nil {
		return err
	}
	// ent's migration adds indexes, never drops one (that would also drop
	// what an operator added): the ones the schema gave up go here.
	for _, name := range droppedIndexes {
		if _, err := db.SQL.ExecContext(ctx, "DROP INDEX IF EXISTS "+name); err != nil {
			return fmt.Errorf("dropping index %s: %w", name, err)
		}
	}
	if db.Dialect == dialect.Postgres {
		if err := db.setFillFactors(ctx); err != nil {
			return err
		}
	}
	var driver riverdriver.Driver[*sql.Tx]
	switch db.Dialect {
	case dialect.Postgres:
		driver = riverdatabasesql.New(db.SQL)
	default:
		driver = riversqlite.New(db.SQL)
	}
	m, err := rivermigrate.New(driver, nil)
	if err != nil {
		return fmt.Errorf("preparing River migrations: %w", err)
	}
	res, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return fmt.Errorf("migrating River: %w", err)
	}
	if len(res.Versions) > 0 {
		db.log.Info("applied River migrations", "count", len(res.Versions))
	}
	return nil
}

// droppedIndexes were in the schema once: logline_tenant_id cost every
// stored log line an index entry no query used (lines are read by job);
// job_queue_id_status_priority left the scheduler's page of waiting jobs
// to be sorted out of all of them (the index with their whole order
// replaces it).
var droppedIndexes = []string{"logline_tenant_id", "job_queue_id_status_priority"}

// fillFactors leave room on each page of tables whose rows are updated many
// times in place: an update whose new version fits on the row's own page
// and changes no indexed column (a job's waiting reason, its scheduling
// note, metering marks) is a heap-only tuple, written without touching the
// table's indexes. jobs has seven; a scheduling pass placing 5,491 of 10,000
// jobs wrote them 2.5–3× faster (BenchmarkScheduleQueue). ent's migration
// cannot declare storage parameters; they apply to pages filled from now on.
var fillFactors = map[string]int{job.Table: 70}

// setFillFactors sets the fill factors that differ, so a replica starting
// takes no table lock when there is nothing to change.
func (db *DB) setFillFactors(ctx context.Context) error {
	for table, percent := range fillFactors {
		want := fmt.Sprintf("fillfactor=%d", percent)
		var set bool
		err := db.SQL.QueryRowContext(ctx, "SELECT coalesce($2 = ANY(reloptions), false) FROM pg_class WHERE oid = $1::regclass", table, want).Scan(&set)
		if err != nil {
			return fmt.Errorf("reading the fill factor of %s: %w", table, err)
		}
		if set {
			continue
		}
		q := fmt.Sprintf("ALTER TABLE %s SET (%s)", table, want)
		if _, err := db.SQL.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("setting the fill factor of %s: %w", table, err)
		}
	}
	return nil
}
