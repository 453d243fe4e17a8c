package ledger_test

import (
	"errors"
	"testing"

	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/ledger"
)

// TestPayerTenant: a payer names its tenant. Front doors leave it empty and
// get the viewer's; naming another tenant is refused, for reads and grants.
// BalanceOf, for domain code, reads the tenant it is given and needs one.
func TestPayerTenant(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		tn := fixture.New(t, url, fixture.TenantOptions{Slug: "alpha"})
		other := fixture.NewTenant(t, tn.DB, fixture.TenantOptions{Slug: "beta"})
		other.Grant(t, ledger.Payer{UserID: other.Admin.ID}, 11*billing.Unit)
		theirs := ledger.Payer{TenantID: other.ID, UserID: other.Admin.ID}

		s := &ledger.Service{DB: tn.DB}
		ctx := tn.AsAdmin()
		forbidden := func(what string, err error) {
			t.Helper()
			var fe *fault.Error
			if !errors.As(err, &fe) || fe.Code != fault.Forbidden {
				t.Errorf("%s: err %v, want FORBIDDEN", what, err)
			}
		}
		_, err := s.Balance(ctx, theirs)
		forbidden("balance of another tenant's payer", err)
		_, err = s.Grant(ctx, theirs, billing.Unit, "not mine to give")
		forbidden("grant to another tenant's payer", err)

		// Without a tenant the payer is the viewer's: the other tenant's
		// charges do not count.
		if b, err := s.Balance(ctx, ledger.Payer{UserID: other.Admin.ID}); err != nil || b != 0 {
			t.Errorf("balance in the viewer's tenant = %s, %v; want 0", b, err)
		}
		if b, err := ledger.BalanceOf(ctx, tn.DB.Ent, theirs); err != nil || b != 11*billing.Unit {
			t.Errorf("BalanceOf(%s of %s) = %s, %v; want 11 (the refused grant wrote nothing)", theirs, other.ID, b, err)
		}
		if _, err := ledger.BalanceOf(ctx, tn.DB.Ent, ledger.Payer{UserID: other.Admin.ID}); err == nil {
			t.Error("BalanceOf without a tenant answered; want an error")
		}
	})
}
