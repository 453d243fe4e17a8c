package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the environment variable holding the URL of the PostgreSQL
// cluster that tests create their databases on.
const EnvURL = "LEVERS9_TEST_POSTGRES_URL"

// Main is for TestMain: it starts a cluster for this test binary unless
// EnvURL is already set (e.g. by withpg), runs the tests, and returns the
// exit code.
//
//	func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }
func Main(m *testing.M) int {
	if os.Getenv(EnvURL) != "" {
		return m.Run()
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	c, err := StartCluster(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "dbtest:", err)
		return 1
	}
	defer c.Stop()
	os.Setenv(EnvURL, c.URL)

	// An interrupted test binary would otherwise leave the server running:
	// pg_ctl puts it in its own session, so it never sees the terminal's ^C.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		s := <-sigs
		c.Stop()
		fmt.Fprintf(os.Stderr, "dbtest: %v: stopped PostgreSQL\n", s)
		os.Exit(1)
	}()
	return m.Run()
}

// Dialects lists the databases every test runs against.
func Dialects() []string { return []string{"sqlite", "postgres"} }

// Each runs fn as one subtest per dialect, each with a fresh empty database.
func Each(t *testing.T, fn func(t *testing.T, url string)) {
	t.Helper()
	for _, d := range Dialects() {
		t.Run(d, func(t *testing.T) { fn(t, URL(t, d)) })
	}
}

// URL returns a fresh empty database of the given dialect, removed when t
// ends.
func URL(t testing.TB, dialect string) string {
	t.Helper()
	switch dialect {
	case "sqlite":
		return SQLiteURL(t)
	case "postgres":
		return PostgresURL(t)
	}
	t.Fatalf("dbtest: unknown dialect %q", dialect)
	return ""
}

// SQLiteURL returns the URL of a fresh SQLite database file in t's temp dir.
func SQLiteURL(t testing.TB) string {
	return "sqlite:" + filepath.Join(t.TempDir(), "levers9.db")
}

// PostgresURL creates a uniquely named database on the cluster from EnvURL
// and returns its URL. The database is dropped when t ends.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvURL)
	if base == "" {
		t.Fatal("dbtest: " + EnvURL + " is unset; run tests with `make test` or add dbtest.Main to TestMain")
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("dbtest: parsing %s: %v", EnvURL, err)
	}
	name := "t_" + randomHex()
	ident := pgx.Identifier{name}.Sanitize()
	if err := admin(base, "CREATE DATABASE "+ident); err != nil {
		t.Fatalf("dbtest: creating database: %v", err)
	}
	t.Cleanup(func() {
		// FORCE because a test may leave connections open (e.g. a pool it
		// never closed), which would otherwise block the drop.
		if err := admin(base, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
			t.Errorf("dbtest: dropping database: %v", err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

// admin runs one statement on the cluster's maintenance database. It uses
// its own context because cleanups run after the test's context is done.
func admin(url, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connecting to test cluster: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

func randomHex() string {
	b := make([]byte, 8)
	rand.Read(b) // never fails, per its docs
	return hex.EncodeToString(b)
}
