package database

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/levers9/levers9/internal/metrics"
)

// statementCounter counts the statements pgx runs on PostgreSQL
// (metrics.DatabaseStatements), as the statement cache does on SQLite.
// Transaction control is left out, as on SQLite, where it does not pass
// through the cache: the two count the same work alike.
type statementCounter struct{}

func (statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if !transactionControl(data.SQL) {
		metrics.DatabaseStatements.Inc()
	}
	return ctx
}

func (statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// transactionControl reports whether sql begins, commits or rolls back a
// transaction (as pgx and database/sql write them).
func transactionControl(sql string) bool {
	word, _, _ := strings.Cut(strings.TrimSpace(sql), " ")
	// EqualFold: no lowered copy of every statement's first word.
	return strings.EqualFold(word, "begin") || strings.EqualFold(word, "commit") || strings.EqualFold(word, "rollback")
}
