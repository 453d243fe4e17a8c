package database

import (
	"container/list"
	"context"
	"database/sql/driver"
	"fmt"
	"reflect"
	"sync"

	"github.com/levers9/levers9/internal/metrics"
)

// stmtCacheSize bounds the statements kept per SQLite connection. ent
// writes a few hundred distinct texts (IN lists differ by their length);
// the least recently used go first.
const stmtCacheSize = 512

// cachingConnector opens SQLite connections that keep their prepared
// statements: modernc's driver compiles every query it is given and
// throws the program away after one run, and compiling was a fifth of the
// server's CPU under load (SQLite's parser, BenchmarkThroughput's profile).
// pgx caches statements of its own on PostgreSQL.
// It wraps the driver's connector as its documentation shows
// (sqlite.NewConnector).
type cachingConnector struct{ driver.Connector }

func (c cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return newCachedConn(conn)
}

// sqliteConn is what database/sql uses of a modernc connection.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// cachedConn runs queries and statements through prepared statements kept
// by their text. A statement whose rows are still open is busy: the same
// text run meanwhile gets a statement of its own, closed after its run.
// database/sql uses a connection from one goroutine at a time; the mutex
// only guards against a Rows closed from elsewhere.
type cachedConn struct {
	sqliteConn
	mu    sync.Mutex
	stmts map[string]*list.Element // of *cachedStmt, most recent first
	lru   *list.List
}

type cachedStmt struct {
	query   string
	stmt    driver.Stmt
	busy    bool // its rows are open
	evicted bool // out of the cache: closed when no longer busy
}

func newCachedConn(conn driver.Conn) (*cachedConn, error) {
	sc, ok := conn.(sqliteConn)
	if !ok {
		_ = conn.Close()
		return nil, fmt.Errorf("the SQLite driver's connection (%T) lacks an interface the statement cache needs", conn)
	}
	return &cachedConn{sqliteConn: sc, stmts: map[string]*list.Element{}, lru: list.New()}, nil
}

// take returns a statement for query and the function that gives it back.
func (c *cachedConn) take(ctx context.Context, query string) (driver.Stmt, func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.stmts[query]; ok {
		cs := e.Value.(*cachedStmt)
		if !cs.busy {
			cs.busy = true
			c.lru.MoveToFront(e)
			return cs.stmt, func() { c.give(cs) }, nil
		}
		st, err := c.sqliteConn.PrepareContext(ctx, query)
		if err != nil {
			return nil, nil, err
		}
		return st, func() { closeStmt(st) }, nil
	}
	st, err := c.sqliteConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, nil, err
	}
	cs := &cachedStmt{query: query, stmt: st, busy: true}
	c.stmts[query] = c.lru.PushFront(cs)
	for c.lru.Len() > stmtCacheSize {
		old := c.lru.Remove(c.lru.Back()).(*cachedStmt)
		delete(c.stmts, old.query)
		old.evicted = true
		if !old.busy {
			closeStmt(old.stmt)
		}
	}
	return st, func() { c.give(cs) }, nil
}

func (c *cachedConn) give(cs *cachedStmt) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs.busy = false
	if cs.evicted {
		closeStmt(cs.stmt)
	}
}

// closeStmt finalizes st. SQLite frees a statement whatever finalize
// returns: its result is the last run's error, which that run returned
// already.
func closeStmt(st driver.Stmt) { _ = st.Close() }

// Unwrap is the driver's connection (modernc's helpers look through
// wrappers with it).
func (c *cachedConn) Unwrap() driver.Conn { return c.sqliteConn }

func (c *cachedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	metrics.DatabaseStatements.Inc()
	st, give, err := c.take(ctx, query)
	if err != nil {
		return nil, err
	}
	defer give()
	return st.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (c *cachedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	metrics.DatabaseStatements.Inc()
	st, give, err := c.take(ctx, query)
	if err != nil {
		return nil, err
	}
	rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		give()
		return nil, err
	}
	return &cachedRows{Rows: rows, give: give}, nil
}

// Close closes the cached statements, then the connection.
func (c *cachedConn) Close() error {
	c.mu.Lock()
	for _, e := range c.stmts {
		if cs := e.Value.(*cachedStmt); !cs.busy {
			closeStmt(cs.stmt)
		}
	}
	clear(c.stmts)
	c.lru.Init()
	c.mu.Unlock()
	return c.sqliteConn.Close()
}

// cachedRows gives its statement back when closed, and passes on the
// column types modernc reports.
type cachedRows struct {
	driver.Rows
	give   func()
	closed bool
}

func (r *cachedRows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	defer r.give()
	return r.Rows.Close()
}

func (r *cachedRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *cachedRows) ColumnTypeLength(i int) (int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeLength); ok {
		return t.ColumnTypeLength(i)
	}
	return 0, false
}

func (r *cachedRows) ColumnTypeNullable(i int) (bool, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeNullable); ok {
		return t.ColumnTypeNullable(i)
	}
	return false, false
}

func (r *cachedRows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypePrecisionScale); ok {
		return t.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}

func (r *cachedRows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}
