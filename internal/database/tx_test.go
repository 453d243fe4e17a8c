package database

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/levers9/levers9/internal/dbtest"
)

// InTx runs a transaction again only when PostgreSQL gave it up for
// another (deadlock, serialization failure), at most txAttempts times, and
// hands back fn's own error.
func TestInTxRetries(t *testing.T) {
	t.Parallel()
	serialization := &pgconn.PgError{Code: "40001"}
	deadlock := &pgconn.PgError{Code: "40P01"}
	unique := &pgconn.PgError{Code: "23505"}
	plain := errors.New("plain")
	tests := []struct {
		name     string
		errs     []error // fn's answers in turn; then nil
		want     error
		attempts int
	}{
		{"success", nil, nil, 1},
		{"serialization failures then success", []error{serialization, serialization}, nil, 3},
		{"deadlock then success", []error{deadlock}, nil, 2},
		{"gives up after its attempts", []error{deadlock, deadlock, deadlock, deadlock, deadlock, deadlock}, deadlock, txAttempts},
		{"other database errors are final", []error{unique}, unique, 1},
		{"fn's errors are final", []error{plain}, plain, 1},
		{"a final error on the last attempt", []error{deadlock, deadlock, deadlock, deadlock, plain}, plain, txAttempts},
	}
	dbtest.Each(t, func(t *testing.T, url string) {
		db, err := Open(context.Background(), url, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				attempts := 0
				err := db.InTx(context.Background(), func(*Tx) error {
					attempts++
					if attempts <= len(tc.errs) {
						return tc.errs[attempts-1]
					}
					return nil
				})
				// The very error fn returned, not a wrapper of it.
				if err != tc.want {
					t.Fatalf("InTx = %#v, want %#v", err, tc.want)
				}
				if attempts != tc.attempts {
					t.Fatalf("%d attempts, want %d", attempts, tc.attempts)
				}
			})
		}
	})
}

// A context that ends while InTx waits to run a transaction again ends
// the wait at once. Not parallel: it lengthens the wait of every InTx.
func TestInTxRetryStopsWithContext(t *testing.T) {
	defer func(old func() backoff.BackOff) { txBackOff = old }(txBackOff)
	txBackOff = func() backoff.BackOff { return backoff.NewConstantBackOff(time.Hour) }
	dbtest.Each(t, func(t *testing.T, url string) {
		db, err := Open(context.Background(), url, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		attempts := 0
		done := make(chan error, 1)
		go func() {
			done <- db.InTx(ctx, func(*Tx) error {
				attempts++
				return &pgconn.PgError{Code: "40001"}
			})
		}()
		select {
		case err := <-done:
			if !errors.Is(err, context.DeadlineExceeded) || attempts != 1 {
				t.Fatalf("InTx = %v after %d attempts; want the context's end after 1", err, attempts)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("InTx slept through the end of its context")
		}
	})
}

// BeforeCommit runs its functions after fn, in the transaction, once per
// key, in the order first asked for, including those its functions ask
// for; an error from one rolls back everything the transaction wrote.
func TestBeforeCommit(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db, err := Open(ctx, url, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if _, err := db.SQL.ExecContext(ctx, "CREATE TABLE before_commit (n integer)"); err != nil {
			t.Fatal(err)
		}
		insert := func(tx *Tx, n int) func(context.Context) error {
			return func(ctx context.Context) error {
				_, err := tx.SQL.ExecContext(ctx, "INSERT INTO before_commit (n) VALUES ($1)", n)
				return err
			}
		}
		rows := func() []int {
			t.Helper()
			r, err := db.SQL.QueryContext(ctx, "SELECT n FROM before_commit ORDER BY n")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var out []int
			for r.Next() {
				var n int
				if err := r.Scan(&n); err != nil {
					t.Fatal(err)
				}
				out = append(out, n)
			}
			return out
		}
		var order []string
		err = db.InTx(ctx, func(tx *Tx) error {
			tx.BeforeCommit("a", func(ctx context.Context) error {
				order = append(order, "a")
				tx.BeforeCommit("c", func(context.Context) error { order = append(order, "c"); return insert(tx, 3)(ctx) })
				tx.BeforeCommit("a", func(context.Context) error { order = append(order, "a again"); return nil })
				return insert(tx, 1)(ctx)
			})
			tx.BeforeCommit("b", func(ctx context.Context) error { order = append(order, "b"); return insert(tx, 2)(ctx) })
			tx.BeforeCommit("a", func(context.Context) error { order = append(order, "a twice"); return nil })
			order = append(order, "fn")
			return insert(tx, 0)(ctx)
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(order, ","); got != "fn,a,b,c" {
			t.Fatalf("ran %s, want fn,a,b,c", got)
		}
		if got := rows(); !slices.Equal(got, []int{0, 1, 2, 3}) {
			t.Fatalf("rows %v, want 0 1 2 3", got)
		}

		failed := errors.New("failed")
		err = db.InTx(ctx, func(tx *Tx) error {
			tx.BeforeCommit("x", insert(tx, 10))
			tx.BeforeCommit("y", func(context.Context) error { return failed })
			return insert(tx, 11)(ctx)
		})
		if !errors.Is(err, failed) {
			t.Fatalf("InTx = %v, want the hook's error", err)
		}
		if got := rows(); !slices.Equal(got, []int{0, 1, 2, 3}) {
			t.Fatalf("after a failed hook: rows %v, want 0 1 2 3", got)
		}

		// fn's own error: nothing of it runs.
		ran := false
		err = db.InTx(ctx, func(tx *Tx) error {
			tx.BeforeCommit("z", func(context.Context) error { ran = true; return nil })
			return failed
		})
		if !errors.Is(err, failed) || ran {
			t.Fatalf("InTx = %v, hook ran %v; want fn's error and no hook", err, ran)
		}
	})
}
