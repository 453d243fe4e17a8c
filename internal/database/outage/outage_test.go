package outage_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "modernc.org/sqlite"

	"github.com/levers9/levers9/internal/database/outage"
)

// fromPgconn stands in for pgconn's unexported errors of a connection
// that broke while in use: they say SafeToRetry and wrap the cause.
type fromPgconn struct{ err error }

func (e fromPgconn) Error() string     { return "failed to receive message: " + e.err.Error() }
func (e fromPgconn) Unwrap() error     { return e.err }
func (e fromPgconn) SafeToRetry() bool { return false }

// TestIs: the database going away is an outage, however it shows; the
// database answering, a request that ended, and other parts' network
// failures are not.
func TestIs(t *testing.T) {
	t.Parallel()
	refused := connectRefused(t)
	busy, constraint := sqliteErrors(t)
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"connect refused", refused, true},
		{"connect refused, wrapped", fmt.Errorf("looking up token: %w", refused), true},
		{"admin shutdown", &pgconn.PgError{Severity: "FATAL", Code: "57P01"}, true},
		{"crash shutdown", &pgconn.PgError{Severity: "FATAL", Code: "57P02"}, true},
		{"cannot connect now", fmt.Errorf("ent: %w", &pgconn.PgError{Severity: "FATAL", Code: "57P03"}), true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"wrong password", &pgconn.PgError{Severity: "FATAL", Code: "28P01"}, false},
		{"statement timeout", &pgconn.PgError{Code: "57014"}, false},
		{"bad conn", fmt.Errorf("querying: %w", driver.ErrBadConn), true},
		{"conn closed", fmt.Errorf("querying: %w", pgconn.ErrConnClosed), true},
		{"reset while reading", fromPgconn{reset}, true},
		{"EOF while reading", fromPgconn{io.ErrUnexpectedEOF}, true},
		{"deadline while reading", fromPgconn{context.DeadlineExceeded}, false},
		{"canceled while connecting", fmt.Errorf("%w: %w", context.Canceled, refused), false},
		{"reset, not from pgconn", fmt.Errorf("reading from the node: %w", reset), false},
		{"EOF, not from pgconn", io.ErrUnexpectedEOF, false},
		{"bare deadline", context.DeadlineExceeded, false},
		{"only words", errors.New("dial tcp 10.0.0.1:5432: connect: connection refused"), false},
		{"sqlite busy", busy, true},
		{"sqlite constraint", constraint, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := outage.Is(tc.err); got != tc.want {
				t.Errorf("Is(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// connectRefused is pgconn's real error for a port nobody listens on.
func connectRefused(t *testing.T) error {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, "postgres://postgres@"+addr+"/postgres?sslmode=disable&connect_timeout=5")
	if err == nil {
		conn.Close(ctx)
		t.Fatalf("connecting to %s (closed) worked", addr)
	}
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("connecting to a closed port: %v (%T), want a refused ConnectError", err, err)
	}
	return err
}

// sqliteErrors are SQLite's real errors for a write lock another
// connection holds past busy_timeout, and for a duplicate key.
func sqliteErrors(t *testing.T) (busy, constraint error) {
	t.Helper()
	ctx := context.Background()
	dsn := "file:" + filepath.Join(t.TempDir(), "x.db") + "?_pragma=busy_timeout(0)&_pragma=journal_mode(WAL)&_txlock=immediate"
	open := func() *sql.DB {
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
		return db
	}
	a, b := open(), open()
	if _, err := a.ExecContext(ctx, "CREATE TABLE t (k TEXT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ExecContext(ctx, "INSERT INTO t VALUES ('x')"); err != nil {
		t.Fatal(err)
	}
	_, constraint = a.ExecContext(ctx, "INSERT INTO t VALUES ('x')")
	if constraint == nil {
		t.Fatal("a duplicate key was inserted")
	}
	tx, err := a.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	_, busy = b.BeginTx(ctx, nil)
	if busy == nil {
		t.Fatal("a second writer began while the first held the lock")
	}
	return busy, constraint
}
