// Package outage tells the errors that mean the database cannot be reached
// now (stopped, restarting, failing over, out of connections, locked by
// another process) from all others. Front doors answer those UNAVAILABLE
// (HTTP 503 with Retry-After) instead of INTERNAL: a client cannot outlast
// a bug by trying again, but it can outlast an outage.
//
// It is a leaf package, apart from internal/database, so that
// internal/fault (which every package imports) can use it without
// importing what the database package does.
package outage

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// pgUnreachable are the SQLSTATEs of a PostgreSQL server that is there
// but will not serve now; class 08 (connection exception) is checked apart.
var pgUnreachable = map[string]bool{
	"57P01": true, // admin_shutdown: pg_ctl stop, a failover
	"57P02": true, // crash_shutdown: another backend crashed
	"57P03": true, // cannot_connect_now: starting up, shutting down, recovering
	"53300": true, // too_many_connections: full until others end
}

// Is reports whether err means the database cannot be reached now, so
// that the same request may succeed later unchanged.
func Is(err error) bool {
	// A request that ended (its client left) is no outage, whatever
	// failed because of it.
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	// The server answered: its code says whether it is going away. Any
	// other code is a real answer, also when connecting (a wrong password,
	// a missing database): waiting would not change it.
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pgUnreachable[pg.Code] || strings.HasPrefix(pg.Code, "08")
	}
	// The pool could not open a connection: refused, reset, no route, or
	// the context's deadline passed while connecting.
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	// database/sql gave up on connections that kept breaking; pgx refuses
	// to use one that a failure already closed.
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, pgconn.ErrConnClosed) {
		return true
	}
	// An open connection broke while in use. The network error must come
	// from pgconn (its errors say SafeToRetry), or a reset connection to
	// a node or to object storage would pass for a database outage.
	// A statement that ran out of its context's time is not one either
	// (context.DeadlineExceeded passes for a net.Error).
	var fromPgconn interface{ SafeToRetry() bool }
	if errors.As(err, &fromPgconn) && brokenConn(err) && !errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	// SQLite waited its busy_timeout for another process's write lock (a
	// backup, a second server on the same file).
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()&0xff == sqlite3.SQLITE_BUSY
	}
	return false
}

// brokenConn reports whether err is a connection failing at the network:
// the peer went away, reset it, or stopped answering.
func brokenConn(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED)
}
