package ledger_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/ledger"
)

// TestDailySpending: Daily sums debits per UTC day and per user, project
// or queue in the window only, leaves grants out, and shows a member their
// own charges and no other tenant's.
func TestDailySpending(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		tn := fixture.New(t, url, fixture.TenantOptions{Slug: "alpha"})
		other := fixture.NewTenant(t, tn.DB, fixture.TenantOptions{Slug: "beta"})
		a, b := tn.AddMember(t, "a"), tn.AddMember(t, "b")
		p := tn.AddProject(t, "p")
		js := fixture.Jobs(tn.DB, time.Now)
		ja := tn.Submit(t, js, a, fixture.Service(1, 64))
		jo := other.Submit(t, fixture.Jobs(tn.DB, time.Now), nil, fixture.Service(1, 64))

		from := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
		n := 0
		add := func(tenant, user, project, jobID string, kind charge.Kind, tokens billing.Tokens, at time.Time) {
			t.Helper()
			n++
			c := tn.DB.Ent.Charge.Create().SetTenantID(tenant).SetUserID(user).SetKind(kind).SetTokens(tokens).
				SetCreatedAt(at).SetIdempotencyKey(fmt.Sprint("daily-", n)).SetPayerKind(charge.PayerKindUser)
			if project != "" {
				c.SetProjectID(project).SetPayerKind(charge.PayerKindProject)
			}
			if jobID != "" {
				c.SetJobID(jobID)
			}
			if err := c.Exec(fixture.Sys()); err != nil {
				t.Fatal(err)
			}
		}
		// Late in the first day in UTC, in another zone: still the first.
		late := time.Date(2026, 11, 20, 23, 30, 0, 0, time.UTC).In(time.FixedZone("east", 5*3600))
		add(tn.ID, a.ID, "", ja.ID, charge.KindStart, 3*billing.Unit, from.Add(time.Hour))
		add(tn.ID, a.ID, "", ja.ID, charge.KindCompute, billing.Unit/2, late)
		add(tn.ID, b.ID, p.ID, "", charge.KindStorage, 5*billing.Unit, from.AddDate(0, 0, 2).Add(time.Minute))
		add(tn.ID, a.ID, "", "", charge.KindGrant, -100*billing.Unit, from.Add(2*time.Hour))    // a credit
		add(tn.ID, a.ID, "", ja.ID, charge.KindCompute, 9*billing.Unit, from.Add(-time.Minute)) // before
		add(tn.ID, a.ID, "", ja.ID, charge.KindCompute, 9*billing.Unit, from.AddDate(0, 0, 3))  // after
		add(other.ID, other.Admin.ID, "", jo.ID, charge.KindCompute, 11*billing.Unit, from.Add(time.Hour))

		s := &ledger.Service{DB: tn.DB}
		type row = map[string][]billing.Tokens
		for _, tc := range []struct {
			name string
			as   string
			by   ledger.Grouping
			want row
		}{
			{"admin by user", "admin", ledger.ByUser, row{a.ID: {3_500_000, 0, 0}, b.ID: {0, 0, 5 * billing.Unit}}},
			{"admin by project", "admin", ledger.ByProject, row{"": {3_500_000, 0, 0}, p.ID: {0, 0, 5 * billing.Unit}}},
			{"admin by queue", "admin", ledger.ByQueue, row{tn.DefaultQueue: {3_500_000, 0, 0}, "": {0, 0, 5 * billing.Unit}}},
			{"member sees their own", "a", ledger.ByUser, row{a.ID: {3_500_000, 0, 0}}},
		} {
			ctx := tn.AsAdmin()
			if tc.as == "a" {
				ctx = tn.As(a)
			}
			d, err := s.Daily(ctx, tn.DB.Ent.Charge.Query(), tc.by, from.Add(5*time.Hour), 3)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if fmt.Sprint(d.Days) != "[2026-11-20 2026-11-21 2026-11-22]" {
				t.Errorf("%s: days %v", tc.name, d.Days)
			}
			got := row{}
			for _, sr := range d.Series {
				got[sr.Key] = sr.Tokens
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			}
			if len(d.Series) > 0 && d.Series[0].Total < d.Series[len(d.Series)-1].Total {
				t.Errorf("%s: series not largest first", tc.name)
			}
		}
		if _, err := s.Daily(tn.AsAdmin(), tn.DB.Ent.Charge.Query(), ledger.ByKind, from, 3); err == nil {
			t.Error("daily by kind: no error")
		}
		if _, err := s.Daily(tn.AsAdmin(), tn.DB.Ent.Charge.Query(), ledger.ByUser, from, ledger.MaxDays+1); err == nil {
			t.Error("a window over MaxDays: no error")
		}
	})
}
