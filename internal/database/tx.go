package database

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"
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

	// last holds what runs just before the commit, in the order first
	// asked for, once per key (see BeforeCommit).
	last     []func(context.Context) error
	lastKeys map[string]bool
}

// BeforeCommit has fn run as the transaction's last statements, once per
// key however often it is asked for: for writes to a row that many
// transactions share, such as River's unique job of a queue's scheduling
// pass. PostgreSQL locks such a row from the write to the commit, so a
// write made early makes every other writer wait out the rest of this
// transaction; made last, only its commit. An error from fn rolls the
// transaction back.
func (tx *Tx) BeforeCommit(key string, fn func(context.Context) error) {
	if tx.lastKeys[key] {
		return
	}
	if tx.lastKeys == nil {
		tx.lastKeys = map[string]bool{}
	}
	tx.lastKeys[key] = true
	tx.last = append(tx.last, fn)
}

// InTx runs fn in a transaction, committing when it returns nil and rolling
// back otherwise (also on panic). Entities loaded through tx.Ent stay usable
// after the transaction ends: their lazy edge loads go to the database.
//
// On PostgreSQL a transaction that loses a deadlock or a serialization
// conflict is run again (fn must only touch the database), a few times;
// the wait between runs ends early when ctx does.
func (db *DB) InTx(ctx context.Context, fn func(tx *Tx) error) error {
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		err := db.inTx(ctx, fn)
		if err != nil && !retryable(err) {
			return struct{}{}, backoff.Permanent(err)
		}
		return struct{}{}, err
	}, backoff.WithBackOff(txBackOff()), backoff.WithMaxTries(txAttempts), backoff.WithMaxElapsedTime(0))
	// Retry hands back the last attempt's error marked permanent: callers
	// see fn's own error.
	if p, ok := err.(*backoff.PermanentError); ok {
		return p.Err
	}
	return err
}

// txAttempts is how many times a transaction is run in all.
const txAttempts = 5

// txBackOff is the wait before a transaction runs again: a few
// milliseconds, doubling, jittered so that the transactions that collided
// do not collide again. A variable for the tests.
var txBackOff = func() backoff.BackOff {
	return &backoff.ExponentialBackOff{
		InitialInterval:     3 * time.Millisecond, // 1 to 5 ms, then 2 to 10, …
		RandomizationFactor: 2.0 / 3,
		Multiplier:          2,
		MaxInterval:         24 * time.Millisecond,
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
	for i := 0; i < len(tx.last); i++ { // what these add runs too
		if err := tx.last[i](ctx); err != nil {
			return err
		}
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

// ExecContext runs a statement ent's builders do not write (ent's client
// offers it with the ExecQuery feature), in the transaction.
func (d *txDriver) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	e, ok := d.current().(interface {
		ExecContext(context.Context, string, ...any) (sql.Result, error)
	})
	if !ok {
		return nil, fmt.Errorf("the %s driver runs no plain statements", d.Dialect())
	}
	return e.ExecContext(ctx, query, args...)
}

func (d *txDriver) Close() error    { return nil }
func (d *txDriver) Dialect() string { return d.tx.Dialect() }
