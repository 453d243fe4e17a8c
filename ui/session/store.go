// Package session keeps dashboard sessions (scs) in the levers9 database,
// on SQLite and PostgreSQL alike, so that sessions survive restarts and are
// shared by replicas.
package session

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"entgo.io/ent/dialect"

	"github.com/alexedwards/scs/v2"
)

// Table is the table sessions are kept in.
const Table = "dashboard_sessions"

// Store is an scs.CtxStore over database/sql. Expiry is kept as Unix
// seconds so that one schema and one set of statements fit both databases.
type Store struct {
	db *sql.DB
	// The statements differ only in their placeholders.
	find, upsert, del, take, purge string
}

var _ scs.CtxStore = (*Store)(nil)

// NewStore creates the sessions table when missing and returns a store on
// it. dialectName is ent's dialect name (dialect.SQLite or dialect.Postgres).
func NewStore(ctx context.Context, db *sql.DB, dialectName string) (*Store, error) {
	blob := "BLOB"
	if dialectName == dialect.Postgres {
		blob = "BYTEA"
	}
	ddl := []string{
		`CREATE TABLE IF NOT EXISTS ` + Table + ` (token TEXT PRIMARY KEY, data ` + blob + ` NOT NULL, expiry BIGINT NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS ` + Table + `_expiry ON ` + Table + ` (expiry)`,
	}
	for _, q := range ddl {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("creating the sessions table: %w", err)
		}
	}
	// Both drivers accept $N placeholders.
	return &Store{
		db:     db,
		find:   `SELECT data FROM ` + Table + ` WHERE token = $1 AND expiry > $2`,
		upsert: `INSERT INTO ` + Table + ` (token, data, expiry) VALUES ($1, $2, $3) ON CONFLICT (token) DO UPDATE SET data = excluded.data, expiry = excluded.expiry`,
		del:    `DELETE FROM ` + Table + ` WHERE token = $1`,
		take:   `DELETE FROM ` + Table + ` WHERE token = $1 AND expiry > $2 RETURNING data`,
		purge:  `DELETE FROM ` + Table + ` WHERE expiry <= $1`,
	}, nil
}

// FindCtx returns the data of an unexpired session.
func (s *Store) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	var b []byte
	err := s.db.QueryRowContext(ctx, s.find, token, time.Now().Unix()).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading session: %w", err)
	}
	return b, true, nil
}

// CommitCtx stores a session until expiry.
func (s *Store) CommitCtx(ctx context.Context, token string, b []byte, expiry time.Time) error {
	if _, err := s.db.ExecContext(ctx, s.upsert, token, b, expiry.Unix()); err != nil {
		return fmt.Errorf("storing session: %w", err)
	}
	return nil
}

// DeleteCtx removes a session; a missing one is no error.
func (s *Store) DeleteCtx(ctx context.Context, token string) error {
	if _, err := s.db.ExecContext(ctx, s.del, token); err != nil {
		return fmt.Errorf("deleting session: %w", err)
	}
	return nil
}

// TakeCtx deletes an unexpired record and returns its data, in one
// statement: of two replicas taking the same token at once, one gets it
// (single-use tickets).
func (s *Store) TakeCtx(ctx context.Context, token string) ([]byte, bool, error) {
	var b []byte
	err := s.db.QueryRowContext(ctx, s.take, token, time.Now().Unix()).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("taking session: %w", err)
	}
	return b, true, nil
}

// Find, Commit and Delete are the context-free scs.Store methods; scs
// calls the Ctx variants, these exist to satisfy the interface.
func (s *Store) Find(token string) ([]byte, bool, error) {
	return s.FindCtx(context.Background(), token)
}

// Commit is CommitCtx without a context.
func (s *Store) Commit(token string, b []byte, expiry time.Time) error {
	return s.CommitCtx(context.Background(), token, b, expiry)
}

// Delete is DeleteCtx without a context.
func (s *Store) Delete(token string) error { return s.DeleteCtx(context.Background(), token) }

// Purge deletes expired sessions.
func (s *Store) Purge(ctx context.Context) (int64, error) {
	res, err := s.db.ExecContext(ctx, s.purge, time.Now().Unix())
	if err != nil {
		return 0, fmt.Errorf("purging expired sessions: %w", err)
	}
	return res.RowsAffected()
}

// PurgeEvery deletes expired sessions every interval until ctx ends; Find
// already ignores them, this only keeps the table small.
func (s *Store) PurgeEvery(ctx context.Context, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.Purge(ctx); err != nil && ctx.Err() == nil {
				log.Warn("purging expired dashboard sessions", "err", err)
			}
		}
	}
}
