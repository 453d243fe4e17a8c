package tenancy_test

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/viewer"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// counting counts the statements ent sends.
type counting struct {
	dialect.Driver
	n *atomic.Int64
}

func (d counting) Query(ctx context.Context, query string, args, v any) error {
	d.n.Add(1)
	return d.Driver.Query(ctx, query, args, v)
}

// TestUsages: each tenant's running jobs, tokens spent in the last 30 days
// (debits only) and nodes, in three queries however many tenants; only
// superadmins may ask.
func TestUsages(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		a := fixture.New(t, url, fixture.TenantOptions{Slug: "acme"})
		b := fixture.NewTenant(t, a.DB, fixture.TenantOptions{Slug: "bravo"})
		idle := fixture.NewTenant(t, a.DB, fixture.TenantOptions{Slug: "idle"})
		sys := fixture.Sys()
		now := time.Now()
		js := fixture.Jobs(a.DB, nil)
		for i, tn := range []*fixture.Tenant{a, a, b, a} {
			j := tn.Submit(t, js, tn.Admin, fixture.Service(1, 64))
			if i == 3 {
				continue // pending: not running
			}
			if err := js.MarkRunning(context.Background(), j.ID, now); err != nil {
				t.Fatal(err)
			}
		}
		for i, c := range []struct {
			tn     *fixture.Tenant
			tokens billing.Tokens
			at     time.Time
		}{{a, 300, now}, {a, 200, now.Add(-29 * 24 * time.Hour)}, {a, -5000, now}, {a, 900, now.Add(-31 * 24 * time.Hour)}, {b, 40, now}} {
			a.DB.Ent.Charge.Create().SetTenantID(c.tn.ID).SetKind(charge.KindCompute).SetPayerKind(charge.PayerKindUser).
				SetUserID(c.tn.Admin.ID).SetTokens(c.tokens).SetCreatedAt(c.at).SetIdempotencyKey("usage-" + string(rune('a'+i))).ExecX(sys)
		}
		a.AddNode(t, fixture.Node{Name: "on"})
		a.AddNode(t, fixture.Node{Name: "off", Offline: true})
		b.AddNode(t, fixture.Node{Name: "off", Offline: true})

		var n atomic.Int64
		db := *a.DB
		db.Ent = ent.NewClient(ent.Driver(counting{Driver: entsql.OpenDB(a.DB.Dialect, a.DB.SQL), n: &n}))
		ts := &tenancy.Service{DB: &db, Log: fixture.Log()}
		super := viewer.NewContext(context.Background(), &viewer.Viewer{UserID: "usr_root", Superadmin: true})
		got, err := ts.Usages(super, now)
		if err != nil {
			t.Fatal(err)
		}
		if n.Load() != 3 {
			t.Errorf("%d queries; want 3, one per figure", n.Load())
		}
		want := map[string]tenancy.Usage{
			a.ID: {RunningJobs: 2, Spent: 500, Nodes: 2, NodesOnline: 1},
			b.ID: {RunningJobs: 1, Spent: 40, Nodes: 1},
		}
		for id, w := range want {
			if got[id] == nil || *got[id] != w {
				t.Errorf("usage of %s: %+v; want %+v", id, got[id], w)
			}
		}
		if got[idle.ID] != nil {
			t.Errorf("the idle tenant uses %+v; want nothing", got[idle.ID])
		}
		var f *fault.Error
		if _, err := ts.Usages(a.AsAdmin(), now); !errors.As(err, &f) || f.Code != fault.Forbidden {
			t.Errorf("a tenant admin asking: %v; want FORBIDDEN", err)
		}
	})
}
