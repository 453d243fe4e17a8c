// Package database opens the one database levers9 keeps everything in:
// SQLite (the embedded default) or PostgreSQL, shared by ent and River, and
// runs the migrations of both.
package database

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"modernc.org/sqlite"

	"github.com/levers9/levers9/ent"
	_ "github.com/levers9/levers9/ent/runtime" // registers privacy policies and defaults
)

// DB is an open database.
type DB struct {
	// Dialect is dialect.SQLite or dialect.Postgres.
	Dialect string
	// SQL is the database/sql handle ent and River's inserts share.
	SQL *sql.DB
	// Pool is the pgx pool on PostgreSQL (River works jobs and listens for
	// notifications through it); nil on SQLite.
	Pool *pgxpool.Pool
	// Ent is the ent client on SQL.
	Ent *ent.Client
	log *slog.Logger
}

// Open opens url: "postgres://…" or "postgresql://…" for PostgreSQL,
// "sqlite:PATH" (or a plain file path) for SQLite.
func Open(ctx context.Context, rawURL string, log *slog.Logger) (*DB, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	switch {
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		return openPostgres(ctx, rawURL, log)
	default:
		return openSQLite(ctx, strings.TrimPrefix(rawURL, "sqlite:"), log)
	}
}

func openPostgres(ctx context.Context, rawURL string, log *slog.Logger) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parsing database URL: %w", err)
	}
	if cfg.MaxConns < 20 {
		cfg.MaxConns = 20
	}
	cfg.ConnConfig.Tracer = statementCounter{}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connecting to postgres at %s: %w", redact(rawURL), err)
	}
	sqlDB := stdlib.OpenDBFromPool(pool)
	return &DB{
		Dialect: dialect.Postgres,
		SQL:     sqlDB,
		Pool:    pool,
		Ent:     newClient(entsql.OpenDB(dialect.Postgres, sqlDB)),
		log:     log,
	}, nil
}

func openSQLite(ctx context.Context, path string, log *slog.Logger) (*DB, error) {
	if path == "" {
		return nil, errors.New("empty SQLite path")
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("creating database directory: %w", err)
		}
	}
	// One connection: SQLite allows one writer, and River's SQLite driver asks
	// for it. WAL keeps readers of other processes (backups, sqlite3) working.
	// Immediate transactions take the write lock up front, so a transaction
	// never fails half-way on a lock it could not upgrade.
	//
	// SQLite keeps times as text and compares them as text, so every time
	// is written in UTC as "2006-01-02 15:04:05.999999999+00:00": that
	// text sorts as the instants do (a fraction's trailing zeros are
	// trimmed, and '+' and '.' sort before any digit), equal instants get
	// equal text, and SQLite's own date functions read it. The driver's
	// default, time.String(), carries the zone name and the monotonic
	// clock reading, so a page cursor never equalled its own row
	// (migrateTimes rewrites rows written that way).
	dsn := "file:" + path + "?_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)" +
		"&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)&_txlock=immediate" +
		"&_time_format=sqlite&_timezone=UTC"
	connector, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, fmt.Errorf("opening sqlite %s: %w", path, err)
	}
	sqlDB := sql.OpenDB(cachingConnector{connector})
	sqlDB.SetMaxOpenConns(1)
	if err := sqlDB.PingContext(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("opening sqlite %s: %w", path, err)
	}
	// Without statistics SQLite's planner guesses, and picks the tenant
	// index over a better one; optimize gathers them where they are
	// missing or stale (cheap: it limits its own work).
	if _, err := sqlDB.ExecContext(ctx, "PRAGMA optimize=0x10002"); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("optimizing sqlite %s: %w", path, err)
	}
	return &DB{
		Dialect: dialect.SQLite,
		SQL:     sqlDB,
		Ent:     newClient(entsql.OpenDB(dialect.SQLite, sqlDB)),
		log:     log,
	}, nil
}

// Optimize has SQLite gather the planner's statistics of the tables that
// grew since they were last gathered, as SQLite advises long-lived
// connections to do now and then: a server that started on an empty
// database otherwise plans for empty tables for as long as it runs, and
// keeps those plans in its cached statements. A no-op on PostgreSQL,
// where autovacuum analyzes.
func (db *DB) Optimize(ctx context.Context) error {
	if db.Dialect != dialect.SQLite {
		return nil
	}
	if _, err := db.SQL.ExecContext(ctx, "PRAGMA optimize"); err != nil {
		return fmt.Errorf("optimizing sqlite: %w", err)
	}
	return nil
}

// Close closes the database.
func (db *DB) Close() error {
	err := db.Ent.Close()
	if db.Pool != nil {
		db.Pool.Close()
	}
	return err
}

// redact hides the password of a database URL for messages.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
