package joblog

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"

	"entgo.io/ent/dialect"

	"github.com/levers9/levers9/ent/logline"
	"github.com/levers9/levers9/internal/ids"
	"github.com/levers9/levers9/internal/wire"
)

// Lines go in with plain SQL through the transaction: ent's bulk create
// builds a mutation per row and reads every row's ID back, which cost
// several times what storing the rows does (BenchmarkAppend's baseline).

// owner is who a job's lines belong to: copied onto every line so reads
// filter by tenant and environment without a join.
type owner struct{ tenant, environment string }

// lineColumns are the columns of log_lines, in the order rows are given.
var lineColumns = []string{
	logline.FieldID, logline.FieldTenantID, logline.FieldEnvironmentID, logline.FieldJobID, logline.FieldAttempt,
	logline.FieldService, logline.FieldStream, logline.FieldSeq, logline.FieldTime, logline.FieldText,
}

// onConflict skips a line stored already: (job, attempt, seq) is unique,
// so a batch the agent resends after a reconnect is stored once.
var onConflict = fmt.Sprintf(" ON CONFLICT (%s, %s, %s) DO NOTHING", logline.FieldJobID, logline.FieldAttempt, logline.FieldSeq)

// sqliteChunk is the most rows of one SQLite INSERT: 10 parameters each,
// within SQLite's 32766.
const sqliteChunk = 1000

// checkLines refuses what ent's validators would have: an unknown stream.
func checkLines(jobID string, lines []wire.LogLine) error {
	for _, l := range lines {
		if err := logline.StreamValidator(logline.Stream(l.Stream)); err != nil {
			return fmt.Errorf("storing logs of job %s: line %d: %w", jobID, l.Seq, err)
		}
	}
	return nil
}

// inserter stores lines through one transaction. On SQLite it prepares
// the INSERT of a full chunk once per transaction: parsing a 1,000-row
// statement costs about as much as running it. (Per transaction, not per
// database: SQLite has one connection, and preparing outside the
// transaction that holds it would wait forever.)
type inserter struct {
	tx      *sql.Tx
	dialect string
	full    *sql.Stmt // SQLite's full-chunk INSERT, once prepared
}

// close releases the prepared statement.
func (in *inserter) close() {
	if in.full != nil {
		_ = in.full.Close()
	}
}

// ownedBatch is a batch checked and ready to store, with its job's owner.
type ownedBatch struct {
	Batch
	owner
}

// store stores the batches in order, a line stored already being skipped.
func (in *inserter) store(ctx context.Context, bs []ownedBatch) error {
	if in.dialect == dialect.Postgres {
		return in.storePostgres(ctx, bs)
	}
	for _, b := range bs {
		var err error
		for start := 0; start < len(b.Lines) && err == nil; start += sqliteChunk {
			err = in.insertValues(ctx, b.owner, b.JobID, b.Attempt, b.Lines[start:min(start+sqliteChunk, len(b.Lines))])
		}
		if err != nil {
			return fmt.Errorf("storing logs of job %s: %w", b.JobID, err)
		}
	}
	return nil
}

// insertValues stores lines in one multi-row INSERT (SQLite).
func (in *inserter) insertValues(ctx context.Context, o owner, jobID string, attempt int, lines []wire.LogLine) error {
	args := make([]any, 0, len(lines)*len(lineColumns))
	for _, l := range lines {
		args = append(args, ids.New("log"), o.tenant, o.environment, jobID, attempt,
			l.Service, string(l.Stream), int64(l.Seq), l.Time, l.Text)
	}
	if len(lines) < sqliteChunk {
		_, err := in.tx.ExecContext(ctx, valuesSQL(len(lines)), args...)
		return err
	}
	if in.full == nil {
		st, err := in.tx.PrepareContext(ctx, valuesSQL(sqliteChunk))
		if err != nil {
			return err
		}
		in.full = st
	}
	_, err := in.full.ExecContext(ctx, args...)
	return err
}

// valuesStatements caches the INSERT of a full chunk, the common one.
var valuesStatements sync.Map // rows → SQL

// valuesSQL is the INSERT of rows rows with ? placeholders.
func valuesSQL(rows int) string {
	if q, ok := valuesStatements.Load(rows); ok {
		return q.(string)
	}
	row := "(" + strings.TrimSuffix(strings.Repeat("?,", len(lineColumns)), ",") + ")"
	var b strings.Builder
	b.Grow(64 + rows*(len(row)+1) + len(onConflict))
	b.WriteString("INSERT INTO " + logline.Table + " (" + strings.Join(lineColumns, ", ") + ") VALUES ")
	for i := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(row)
	}
	b.WriteString(onConflict)
	q := b.String()
	if rows == sqliteChunk {
		valuesStatements.Store(rows, q)
	}
	return q
}
