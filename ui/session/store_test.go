package session_test

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/ui/session"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// A record taken is gone: of many takers at once exactly one gets it, and
// an expired one is never handed out (single-use relay tickets rest on it).
func TestStoreTake(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		ctx := context.Background()
		db, err := database.Open(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		st, err := session.NewStore(ctx, db.SQL, db.Dialect)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.CommitCtx(ctx, "ticket", []byte("data"), time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		var got atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b, ok, err := st.TakeCtx(ctx, "ticket")
				if err != nil {
					t.Error(err)
				}
				if ok {
					got.Add(1)
					if string(b) != "data" {
						t.Errorf("took %q", b)
					}
				}
			}()
		}
		wg.Wait()
		if n := got.Load(); n != 1 {
			t.Fatalf("%d takers got the record, want exactly 1", n)
		}
		if _, ok, _ := st.FindCtx(ctx, "ticket"); ok {
			t.Fatal("a taken record is still found")
		}
		if err := st.CommitCtx(ctx, "old", []byte("data"), time.Now().Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := st.TakeCtx(ctx, "old"); ok || err != nil {
			t.Fatalf("an expired record was taken (ok %v, err %v)", ok, err)
		}
	})
}
