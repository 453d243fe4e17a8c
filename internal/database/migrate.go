package database

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"entgo.io/ent/dialect"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"

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
	err := db.Ent.Schema.Create(ctx)
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
