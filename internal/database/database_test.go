package database_test

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"os"
	"strings"
	"sync"
	"testing"

	"entgo.io/ent/dialect"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/viewer"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

func open(t *testing.T, url string) *database.DB {
	t.Helper()
	db, err := database.Open(context.Background(), url, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Replicas starting together on one PostgreSQL take turns at migrating.
func TestConcurrentMigrations(t *testing.T) {
	t.Parallel()
	url := dbtest.PostgresURL(t)
	ctx := context.Background()
	const replicas = 4
	var wg sync.WaitGroup
	errs := make(chan error, replicas)
	for range replicas {
		db := open(t, url)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- db.Exclusive(ctx, func() error { return db.Migrate(ctx) })
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent migration: %v", err)
		}
	}
}

func TestMigrateTwiceAndTx(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := open(t, url)
		for range 2 {
			if err := db.Exclusive(ctx, func() error { return db.Migrate(ctx) }); err != nil {
				t.Fatal(err)
			}
		}
		sys := viewer.SystemContext(ctx)
		boom := errors.New("boom")
		err := db.InTx(ctx, func(tx *database.Tx) error {
			if _, err := tx.Ent.Tenant.Create().SetName("T").SetSlug("t").Save(sys); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("InTx = %v, want boom", err)
		}
		if n := db.Ent.Tenant.Query().CountX(sys); n != 0 {
			t.Fatalf("rolled back transaction left %d tenants", n)
		}
		var u *ent.User
		err = db.InTx(ctx, func(tx *database.Tx) error {
			tn, err := tx.Ent.Tenant.Create().SetName("T").SetSlug("t").Save(sys)
			if err != nil {
				return err
			}
			g, err := tx.Ent.Group.Create().SetTenantID(tn.ID).SetName("g").Save(sys)
			if err != nil {
				return err
			}
			u, err = tx.Ent.User.Create().SetTenantID(tn.ID).SetEmail("u@t.test").Save(sys)
			if err != nil {
				return err
			}
			_, err = tx.Ent.Membership.Create().SetTenantID(tn.ID).SetUser(u).SetGroup(g).Save(sys)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		// Entities loaded in a finished transaction still load their edges.
		if n, err := u.QueryMemberships().Count(sys); err != nil || n != 1 {
			t.Fatalf("memberships of a user made in a committed transaction: %d, %v", n, err)
		}
	})
}

// Tables updated in place keep room on their pages (heap-only updates),
// set once by Migrate on PostgreSQL and left alone after.
func TestFillFactors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := open(t, dbtest.PostgresURL(t))
	for range 2 {
		if err := db.Exclusive(ctx, func() error { return db.Migrate(ctx) }); err != nil {
			t.Fatal(err)
		}
	}
	var opts string
	if err := db.SQL.QueryRowContext(ctx, "SELECT coalesce(array_to_string(reloptions, ','), '') FROM pg_class WHERE relname = 'jobs'").Scan(&opts); err != nil {
		t.Fatal(err)
	}
	if opts != "fillfactor=70" {
		t.Fatalf("jobs' storage parameters = %q, want fillfactor=70", opts)
	}
}

// An index the schema gave up is dropped from a database made before:
// log lines keep only their (job, attempt, seq) key besides the ID.
func TestDroppedIndexes(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := open(t, url)
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		// As an earlier version left it.
		if _, err := db.SQL.ExecContext(ctx, "CREATE INDEX logline_tenant_id ON log_lines (tenant_id)"); err != nil {
			t.Fatal(err)
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		q := "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'log_lines' AND name NOT LIKE 'sqlite_autoindex%' ORDER BY name"
		if db.Dialect == dialect.Postgres {
			q = "SELECT indexname FROM pg_indexes WHERE tablename = 'log_lines' AND indexname <> 'log_lines_pkey' ORDER BY indexname"
		}
		rows, err := db.SQL.QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var names []string
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			names = append(names, n)
		}
		if got := strings.Join(names, ","); got != "logline_job_id_attempt_seq" {
			t.Fatalf("indexes of log_lines: %s, want logline_job_id_attempt_seq only", got)
		}
	})
}

// Migrating again keeps every partial index as it is: PostgreSQL prints
// their predicates back in its own words, which must not read as a
// change (each would be dropped and built again at every start).
func TestMigrateKeepsPartialIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := open(t, dbtest.PostgresURL(t))
	indexes := func() map[string]int64 {
		t.Helper()
		rows, err := db.SQL.QueryContext(ctx, "SELECT indexrelid::regclass::text, indexrelid::bigint FROM pg_index WHERE indpred IS NOT NULL AND indexrelid::regclass::text NOT LIKE 'river%'")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		oids := map[string]int64{}
		for rows.Next() {
			var name string
			var oid int64
			if err := rows.Scan(&name, &oid); err != nil {
				t.Fatal(err)
			}
			oids[name] = oid
		}
		return oids
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	before := indexes()
	if len(before) == 0 {
		t.Fatal("no partial index: the schema declares some")
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if after := indexes(); !maps.Equal(before, after) {
		t.Fatalf("partial indexes built again: %v, then %v", before, after)
	}
}
