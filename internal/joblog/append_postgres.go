package joblog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/levers9/levers9/ent/logline"
	"github.com/levers9/levers9/internal/ids"
)

// On PostgreSQL, skipping stored lines costs: INSERT … ON CONFLICT DO
// NOTHING inserts each row speculatively, and that made storing a
// 2,000-line batch about 1.3 times slower than a plain INSERT
// (BenchmarkAppend). Almost every batch is new, its lines after the last
// one stored of its attempt: those go in with a plain INSERT under a
// savepoint, and the unique (job, attempt, seq) key still refuses a
// duplicate. Only if it does (a resend that raced the first copy's
// commit, on another replica) are the batches stored again, skipping what
// is stored. Batches that overlap what is stored go straight that way.

// postgresInsert takes the varying columns as arrays: one statement of a
// fixed text whatever the batch size, so pgx prepares it once per
// connection and PostgreSQL plans it once, and no parameter limit applies.
var postgresInsert = "INSERT INTO " + logline.Table + " (" + strings.Join(lineColumns, ", ") + ")" +
	" SELECT u.id, $1, $2, $3, $4, u.service, u.stream, u.seq, u.time, u.text" +
	" FROM unnest($5::text[], $6::text[], $7::text[], $8::bigint[], $9::timestamptz[], $10::text[])" +
	" AS u(id, service, stream, seq, time, text)"

// postgresInsertSkipping is postgresInsert skipping the lines stored.
var postgresInsertSkipping = postgresInsert + onConflict

// lastSeqSQL is the last seq stored of an attempt: a backward scan of the
// (job, attempt, seq) index that stops at its first row (max(seq) is
// planned as a scan of all of the attempt's rows while the table's
// statistics say it is small).
var lastSeqSQL = fmt.Sprintf("SELECT %[1]s FROM %[2]s WHERE %[3]s = $1 AND %[4]s = $2 ORDER BY %[1]s DESC LIMIT 1",
	logline.FieldSeq, logline.Table, logline.FieldJobID, logline.FieldAttempt)

// freshSavepoint is where a plain INSERT that met a stored line returns to.
const freshSavepoint = "joblog_fresh"

// storePostgres stores the batches in order, a line stored already being
// skipped.
func (in *inserter) storePostgres(ctx context.Context, bs []ownedBatch) error {
	fresh, err := in.fresh(ctx, bs)
	if err != nil {
		return err
	}
	if fresh {
		stored, err := in.storeFresh(ctx, bs)
		if stored || err != nil {
			return err
		}
	}
	for _, b := range bs {
		if err := insertPostgres(ctx, in.tx, postgresInsertSkipping, b); err != nil {
			return fmt.Errorf("storing logs of job %s: %w", b.JobID, err)
		}
	}
	return nil
}

// fresh reports whether every line of bs comes after the last line stored
// of its attempt and after the lines before it in bs, as the transaction
// sees them now. A line stored meanwhile by another transaction is caught
// by the unique key (storeFresh).
func (in *inserter) fresh(ctx context.Context, bs []ownedBatch) (bool, error) {
	type attempt struct {
		job string
		n   int
	}
	last := map[attempt]int64{}
	for _, b := range bs {
		k := attempt{b.JobID, b.Attempt}
		seq, ok := last[k]
		if !ok {
			err := in.tx.QueryRowContext(ctx, lastSeqSQL, b.JobID, b.Attempt).Scan(&seq)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return false, fmt.Errorf("finding the last stored log line of job %s: %w", b.JobID, err)
			}
		}
		for _, l := range b.Lines {
			if int64(l.Seq) <= seq {
				return false, nil
			}
			seq = int64(l.Seq)
		}
		last[k] = seq
	}
	return true, nil
}

// storeFresh stores bs with plain INSERTs under a savepoint. If the unique
// key refuses a line (stored by a transaction that committed after fresh
// looked), it rolls back to the savepoint and reports false: nothing of bs
// is stored then.
func (in *inserter) storeFresh(ctx context.Context, bs []ownedBatch) (bool, error) {
	if _, err := in.tx.ExecContext(ctx, "SAVEPOINT "+freshSavepoint); err != nil {
		return false, fmt.Errorf("storing logs: %w", err)
	}
	for _, b := range bs {
		err := insertPostgres(ctx, in.tx, postgresInsert, b)
		var pg *pgconn.PgError
		if errors.As(err, &pg) && pg.Code == "23505" { // unique_violation
			for _, q := range []string{"ROLLBACK TO SAVEPOINT ", "RELEASE SAVEPOINT "} {
				if _, err := in.tx.ExecContext(ctx, q+freshSavepoint); err != nil {
					return false, fmt.Errorf("storing logs of job %s again, skipping stored lines: %w", b.JobID, err)
				}
			}
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("storing logs of job %s: %w", b.JobID, err)
		}
	}
	if _, err := in.tx.ExecContext(ctx, "RELEASE SAVEPOINT "+freshSavepoint); err != nil {
		return false, fmt.Errorf("storing logs: %w", err)
	}
	return true, nil
}

// insertPostgres stores b's lines with q, postgresInsert or
// postgresInsertSkipping: one INSERT … SELECT FROM unnest.
func insertPostgres(ctx context.Context, tx *sql.Tx, q string, b ownedBatch) error {
	n := len(b.Lines)
	idv, services, streams := make([]string, n), make([]string, n), make([]string, n)
	seqs, times, texts := make([]int64, n), make([]time.Time, n), make([]string, n)
	for i, l := range b.Lines {
		idv[i], services[i], streams[i] = ids.New("log"), l.Service, string(l.Stream)
		seqs[i], times[i], texts[i] = int64(l.Seq), l.Time, l.Text
	}
	_, err := tx.ExecContext(ctx, q, b.tenant, b.environment, b.JobID, int64(b.Attempt),
		idv, services, streams, seqs, times, texts)
	return err
}
