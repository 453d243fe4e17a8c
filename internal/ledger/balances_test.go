package ledger_test

import (
	"os"
	"testing"

	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/ledger"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// TestManyBalances: ProjectBalances and UserBalances give, in one query,
// each payer's Balance, zero for a payer without charges, and count only
// the viewer's tenant.
func TestManyBalances(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		tn := fixture.New(t, url, fixture.TenantOptions{Slug: "alpha"})
		other := fixture.NewTenant(t, tn.DB, fixture.TenantOptions{Slug: "beta"})
		a, b := tn.AddMember(t, "a"), tn.AddMember(t, "b")
		p1, p2, empty := tn.AddProject(t, "p1"), tn.AddProject(t, "p2"), tn.AddProject(t, "empty")
		tn.Grant(t, ledger.Payer{ProjectID: p1.ID}, 5*billing.Unit)
		tn.Grant(t, ledger.Payer{ProjectID: p1.ID}, 2*billing.Unit)
		tn.Grant(t, ledger.Payer{ProjectID: p2.ID}, 3*billing.Unit)
		tn.Grant(t, ledger.Payer{UserID: a.ID}, 7*billing.Unit)
		other.Grant(t, ledger.Payer{UserID: other.Admin.ID}, 11*billing.Unit)

		s := &ledger.Service{DB: tn.DB}
		ctx := tn.AsAdmin()
		ps, err := s.ProjectBalances(ctx, []string{p1.ID, p2.ID, empty.ID})
		if err != nil {
			t.Fatal(err)
		}
		us, err := s.UserBalances(ctx, []string{a.ID, b.ID, other.Admin.ID})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name  string
			got   billing.Tokens
			payer ledger.Payer
			want  billing.Tokens
		}{
			{"p1", ps[p1.ID], ledger.Payer{ProjectID: p1.ID}, 7 * billing.Unit},
			{"p2", ps[p2.ID], ledger.Payer{ProjectID: p2.ID}, 3 * billing.Unit},
			{"empty", ps[empty.ID], ledger.Payer{ProjectID: empty.ID}, 0},
			{"a", us[a.ID], ledger.Payer{UserID: a.ID}, 7 * billing.Unit},
			{"b", us[b.ID], ledger.Payer{UserID: b.ID}, 0},
			{"another tenant's user", us[other.Admin.ID], ledger.Payer{UserID: other.Admin.ID}, 0},
		} {
			one, err := s.Balance(ctx, tc.payer)
			if err != nil {
				t.Fatal(err)
			}
			if tc.got != tc.want || one != tc.want {
				t.Errorf("%s: many %s, one %s, want %s", tc.name, tc.got, one, tc.want)
			}
		}
	})
}
