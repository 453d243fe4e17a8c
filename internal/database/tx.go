package database

import (
	"errors"
	"math/rand/v2"
	"time"

	"context"
	"database/sql"
	"fmt"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/levers9/levers9/ent"
)

// Tx is one database transaction seen by both ent and River: rows written
// through Ent and jobs inserted with River's InsertTx on SQL commit or roll
// back together.
type Tx struct {
	SQL *sql.Tx
	Ent *ent.Client
}

// InTx runs fn in a transaction, committing when it returns nil and rolling
// back otherwise (also on panic). Entities loaded through tx.Ent stay usable
// after the transaction ends: their lazy edge loads go to the database.
//
// On PostgreSQL a transaction that loses a deadlock or a serialization
// conflict is run again (fn must only touch the database), a few times.
func (db *DB) InTx(ctx context.Context, fn func(tx *Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := db.inTx(ctx, fn)
		if attempt == 5 || !retryable(err) || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Duration(attempt*attempt) * time.Millisecond * time.Duration(1+rand.IntN(5)))
	}
}

// retryable reports whether err is PostgreSQL giving up a transaction to
// let another through (deadlock, serialization failure).
func retryable(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && (pg.Code == "40P01" || pg.Code == "40001")
}

func (db *DB) inTx(ctx context.Context, fn func(tx *Tx) error) (err error) {
	sqlTx, err := db.SQL.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("beginning transaction: %w", err)
	}
	drv := &txDriver{
		tx:   entsql.NewDriver(db.Dialect, entsql.Conn{ExecQuerier: sqlTx}),
		base: entsql.OpenDB(db.Dialect, db.SQL),
	}
	defer func() {
		drv.done.Store(true)
		if p := recover(); p != nil {
			_ = sqlTx.Rollback()
			panic(p)
		}
		if err != nil {
			_ = sqlTx.Rollback()
		}
	}()
	tx := &Tx{SQL: sqlTx, Ent: newClient(drv)}
	if err := fn(tx); err != nil {
		return err
	}
	if err := sqlTx.Commit(); err != nil {
		return fmt.Errorf("committing transaction: %w", err)
	}
	return nil
}

// txDriver is an ent driver inside a transaction: statements ent would group
// in a transaction of its own join the outer one instead. Once the
// transaction has ended it falls back to the database.
type txDriver struct {
	tx, base dialect.Driver
	done     atomic.Bool
}

func (d *txDriver) current() dialect.Driver {
	if d.done.Load() {
		return d.base
	}
	return d.tx
}

func (d *txDriver) Exec(ctx context.Context, query string, args, v any) error {
	return d.current().Exec(ctx, query, args, v)
}

func (d *txDriver) Query(ctx context.Context, query string, args, v any) error {
	return d.current().Query(ctx, query, args, v)
}

func (d *txDriver) Tx(ctx context.Context) (dialect.Tx, error) {
	if d.done.Load() {
		return d.base.Tx(ctx)
	}
	return dialect.NopTx(d), nil
}

func (d *txDriver) Close() error    { return nil }
func (d *txDriver) Dialect() string { return d.tx.Dialect() }
