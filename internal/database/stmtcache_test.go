package database

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
)

// cached is the connection's statement cache, for a look inside.
func cached(t *testing.T, conn *sql.Conn) (n int, busy int) {
	t.Helper()
	err := conn.Raw(func(dc any) error {
		c, ok := dc.(*cachedConn)
		if !ok {
			return fmt.Errorf("connection %T, want *cachedConn", dc)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, e := range c.stmts {
			if e.Value.(*cachedStmt).busy {
				busy++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = conn.Raw(func(dc any) error { n = len(dc.(*cachedConn).stmts); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return n, busy
}

// Statements are kept by text and reused; the same text run while its
// rows are open gets a statement of its own, and neither run disturbs the
// other; past the bound the least recent go, an evicted busy statement
// only once its rows close; bad SQL is refused and not kept.
func TestStatementCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := openSQLite(ctx, filepath.Join(t.TempDir(), "c.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.SQL.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	opened, _ := cached(t, conn) // what opening ran (PRAGMA optimize)
	if _, err := conn.ExecContext(ctx, "CREATE TABLE t (n INTEGER)"); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := conn.ExecContext(ctx, "INSERT INTO t (n) VALUES (?)", i); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := cached(t, conn); n != opened+2 {
		t.Fatalf("%d statements cached after two texts, want %d", n, opened+2)
	}

	const q = "SELECT n FROM t WHERE n >= ? ORDER BY n"
	outer, err := conn.QueryContext(ctx, q, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, busy := cached(t, conn); busy != 1 {
		t.Fatalf("%d busy statements while rows are open, want 1", busy)
	}
	var got []int
	for outer.Next() {
		var n int
		if err := outer.Scan(&n); err != nil {
			t.Fatal(err)
		}
		// The same text again while outer's rows are open.
		var inner []int
		rows, err := conn.QueryContext(ctx, q, 3)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var m int
			if err := rows.Scan(&m); err != nil {
				t.Fatal(err)
			}
			inner = append(inner, m)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(inner) != "[3 4]" {
			t.Fatalf("inner run read %v, want [3 4]", inner)
		}
		if n == 1 {
			// Evict everything, outer's statement included, while it runs.
			for i := range stmtCacheSize + 10 {
				if _, err := conn.ExecContext(ctx, fmt.Sprintf("SELECT %d", i)); err != nil {
					t.Fatal(err)
				}
			}
			if n, busy := cached(t, conn); n != stmtCacheSize || busy != 0 {
				t.Fatalf("%d cached (%d busy), want %d (0 busy: outer's was evicted)", n, busy, stmtCacheSize)
			}
		}
		got = append(got, n)
	}
	if err := outer.Close(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[0 1 2 3 4]" {
		t.Fatalf("outer run read %v, want [0 1 2 3 4]", got)
	}
	// Reused after its rows closed: the second run reads fresh results.
	if _, err := conn.ExecContext(ctx, "INSERT INTO t (n) VALUES (9)"); err != nil {
		t.Fatal(err)
	}
	var max int
	for range 2 {
		if err := conn.QueryRowContext(ctx, "SELECT max(n) FROM t WHERE n > ?", 0).Scan(&max); err != nil || max != 9 {
			t.Fatalf("max = %d, %v; want 9", max, err)
		}
	}
	before, _ := cached(t, conn)
	if _, err := conn.ExecContext(ctx, "SELEC nonsense"); err == nil {
		t.Fatal("bad SQL ran")
	}
	if after, _ := cached(t, conn); after != before {
		t.Fatalf("bad SQL changed the cache: %d → %d statements", before, after)
	}
}
