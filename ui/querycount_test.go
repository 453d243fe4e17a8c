package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/group"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/internal/audit"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// countingDriver counts the statements ent sends outside transactions.
type countingDriver struct {
	dialect.Driver
	n *atomic.Int64
}

func (d countingDriver) Query(ctx context.Context, query string, args, v any) error {
	d.n.Add(1)
	return d.Driver.Query(ctx, query, args, v)
}

func (d countingDriver) Exec(ctx context.Context, query string, args, v any) error {
	d.n.Add(1)
	return d.Driver.Exec(ctx, query, args, v)
}

// countingClient is db's ent client, with the same hooks, counting into n.
func countingClient(db *database.DB, n *atomic.Int64) *ent.Client {
	c := ent.NewClient(ent.Driver(countingDriver{Driver: entsql.OpenDB(db.Dialect, db.SQL), n: n}))
	c.Use(audit.Hook())
	return c
}

// TestDashboardQueriesDoNotGrowWithRows: a page runs as many queries for
// 50 rows as for 5 (no query per row, no edge loaded row by row).
func TestDashboardQueriesDoNotGrowWithRows(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		var n atomic.Int64
		e := newEnv(t, dbURL, envOptions{queries: &n})
		ctx := viewer.NewContext(context.Background(), e.admin)
		sys := viewer.SystemContext(context.Background())
		rows := 0
		everyone := e.db.Ent.Group.Query().Where(group.TenantID(e.tenant.ID), group.Name(tenancy.EveryoneGroup)).OnlyX(sys)
		local := e.db.Ent.Storage.Query().Where(storage.TenantID(e.tenant.ID)).FirstX(sys)
		// addRows adds projects, each with a grant, jobs, users and buckets
		// (the member reads them all and writes every other one).
		addRows := func(k int) {
			t.Helper()
			for range k {
				rows++
				bc := e.db.Ent.Bucket.Create().SetTenantID(e.tenant.ID).SetName(fmt.Sprintf("bucket-%03d", rows)).
					SetStorageID(local.ID).SetOwnerID(e.admin.UserID).AddReadGroups(everyone)
				if rows%2 == 0 {
					bc.AddWriteGroups(everyone)
				}
				bc.SaveX(sys)
				pr := e.db.Ent.Project.Create().SetTenantID(e.tenant.ID).SetName(fmt.Sprintf("project-%03d", rows)).SaveX(sys)
				if _, err := (&ledger.Service{DB: e.db}).Grant(ctx, ledger.Payer{ProjectID: pr.ID}, billing.Unit, "seed"); err != nil {
					t.Fatal(err)
				}
				e.submit(e.admin, fmt.Sprintf("job-%03d", rows), "true")
				e.sandbox(e.admin, fmt.Sprintf("sandbox-%03d", rows))
				key := fmt.Sprintf("%064d", rows)
				e.db.Ent.Blueprint.Create().SetTenantID(e.tenant.ID).SetKey(key).SetFirstKey(key).
					SetSteps([]wire.BuildStep{{Key: key, Kind: wire.StepRegistry, Ref: "busybox"}}).
					SetImage("levers9-bp/" + e.tenant.ID + ":" + key).SetOwnerID(e.admin.UserID).SaveX(sys)
				if _, err := e.tenancy.CreateUser(ctx, tenancy.NewUser{Email: fmt.Sprintf("user-%03d@levers9.local", rows), Password: testPassword}); err != nil {
					t.Fatal(err)
				}
			}
		}
		a := e.browser()
		a.signIn(adminEmail)
		pages := []string{"/tokens", "/jobs", "/submit", "/admin/users", "/admin/projects", "/sandboxes", "/blueprints"}
		m := e.browser()
		m.signIn(memberEmail)
		// Pages a member sees through their groups' grants.
		memberPages := []string{"/buckets"}
		count := func() map[string]int64 {
			t.Helper()
			out := map[string]int64{}
			get := func(b *browser, path string) {
				n.Store(0)
				if code, _ := b.get(path); code != http.StatusOK {
					t.Fatalf("GET %s: %d", path, code)
				}
				out[path] = n.Load()
			}
			for _, path := range pages {
				get(a, path)
			}
			for _, path := range memberPages {
				get(m, path)
			}
			return out
		}
		addRows(5)
		count() // warm up: the first request of a session may write
		few := count()
		addRows(45)
		many := count()
		for _, path := range append(pages, memberPages...) {
			if few[path] != many[path] {
				t.Errorf("GET %s: %d queries for 5 rows, %d for 50", path, few[path], many[path])
			}
		}
	})
}
