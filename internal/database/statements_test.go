package database_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/metrics"
	"github.com/levers9/levers9/internal/viewer"
)

// TestStatementsCounted: every statement through the database handle
// counts once on both databases, in a transaction or not, through ent or
// database/sql; BEGIN, COMMIT and ROLLBACK do not. Not parallel: the
// counter is the process's, and other tests' statements would add up.
func TestStatementsCounted(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, url string) {
		db := open(t, url)
		ctx := context.Background()
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		before := testutil.ToFloat64(metrics.DatabaseStatements)
		if _, err := db.SQL.ExecContext(ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
		err := db.InTx(ctx, func(tx *database.Tx) error {
			var n int
			if err := tx.SQL.QueryRowContext(ctx, "SELECT 2").Scan(&n); err != nil {
				return err
			}
			_, err := tx.Ent.Tenant.Query().Count(viewer.SystemContext(ctx))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		tx, err := db.SQL.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "SELECT 3"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if got := testutil.ToFloat64(metrics.DatabaseStatements) - before; got != 4 {
			t.Errorf("%v statements counted, want 4", got)
		}
	})
}
