package dbtest_test

import (
	"database/sql"
	"net/url"
	"os"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/levers9/levers9/internal/dbtest"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// open connects to a dbtest URL with the matching database/sql driver.
func open(t *testing.T, u string) *sql.DB {
	t.Helper()
	driver, dsn := "pgx", u
	if path, ok := strings.CutPrefix(u, "sqlite:"); ok {
		driver, dsn = "sqlite", path
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func dialectOf(u string) string {
	if strings.HasPrefix(u, "sqlite:") {
		return "sqlite"
	}
	return "postgres"
}

func TestEach(t *testing.T) {
	var ran []string
	dbtest.Each(t, func(t *testing.T, u string) {
		ran = append(ran, dialectOf(u))
		db := open(t, u)
		if _, err := db.Exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO items (id, name) VALUES (1, 'lever')`); err != nil {
			t.Fatal(err)
		}
		var name string
		if err := db.QueryRow(`SELECT name FROM items WHERE id = 1`).Scan(&name); err != nil {
			t.Fatal(err)
		}
		if name != "lever" {
			t.Errorf("name = %q, want %q", name, "lever")
		}

		// A second fresh database must not see the first one's table.
		other := open(t, dbtest.URL(t, dialectOf(u)))
		if _, err := other.Exec(`SELECT 1 FROM items`); err == nil {
			t.Error("second fresh database sees the first one's table")
		}
	})
	if want := dbtest.Dialects(); strings.Join(ran, ",") != strings.Join(want, ",") {
		t.Errorf("Each ran %v, want %v", ran, want)
	}
}

func TestPostgresURLsAreDistinct(t *testing.T) {
	a, b := dbName(t, dbtest.PostgresURL(t)), dbName(t, dbtest.PostgresURL(t))
	if a == b {
		t.Fatalf("both fresh databases are named %q", a)
	}
}

func TestPostgresDatabaseDroppedAfterTest(t *testing.T) {
	var name string
	t.Run("inner", func(t *testing.T) {
		u := dbtest.PostgresURL(t)
		name = dbName(t, u)
		open(t, u).Ping() // a connection left open must not block the drop
	})
	var exists bool
	err := open(t, os.Getenv(dbtest.EnvURL)).
		QueryRow(`SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists)
	if err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Errorf("database %q still exists after its test ended", name)
	}
}

func TestEachParallel(t *testing.T) {
	for range 8 {
		t.Run("", func(t *testing.T) {
			t.Parallel()
			dbtest.Each(t, func(t *testing.T, u string) {
				if err := open(t, u).Ping(); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

func dbName(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(p.Path, "/")
}
