package ledger_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"entgo.io/ent/dialect"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/ledger"
)

// summed is the balance of p by its definition, minus the sum of its
// charges, read from the charges themselves.
func summed(t *testing.T, tn *fixture.Tenant, p ledger.Payer) billing.Tokens {
	t.Helper()
	col, id := "user_id", p.UserID
	kind := charge.PayerKindUser
	if p.ProjectID != "" {
		col, id, kind = "project_id", p.ProjectID, charge.PayerKindProject
	}
	var sum int64
	q := fmt.Sprintf("SELECT coalesce(sum(tokens), 0) FROM charges WHERE tenant_id = $1 AND payer_kind = $2 AND %s = $3", col)
	if err := tn.DB.SQL.QueryRow(q, p.TenantID, string(kind), id).Scan(&sum); err != nil {
		t.Fatal(err)
	}
	return -billing.Tokens(sum)
}

// TestBalancesKept: whatever writes charges, one at a time or in bulk,
// skipping duplicates or rolled back, every payer's balance (its balances
// row) stays minus the sum of its charges, in random rounds on both
// databases. A charge of a project's job named its user too, and counts
// for the project only; a charge naming no payer counts for none.
func TestBalancesKept(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		tn := fixture.New(t, url, fixture.TenantOptions{Slug: "alpha"})
		other := fixture.NewTenant(t, tn.DB, fixture.TenantOptions{Slug: "beta"})
		a, b := tn.AddMember(t, "a"), tn.AddMember(t, "b")
		p1, p2 := tn.AddProject(t, "p1"), tn.AddProject(t, "p2")
		payers := []ledger.Payer{
			{TenantID: tn.ID, UserID: a.ID}, {TenantID: tn.ID, UserID: b.ID},
			{TenantID: tn.ID, ProjectID: p1.ID}, {TenantID: tn.ID, ProjectID: p2.ID},
			{TenantID: other.ID, UserID: other.Admin.ID},
		}
		users := []string{a.ID, b.ID}
		ctx, c := fixture.Sys(), tn.DB.Ent
		rng := rand.New(rand.NewPCG(1, 2))
		var keys []string // written so far, to write again
		build := func() *ent.ChargeCreate {
			p := payers[rng.IntN(len(payers))]
			key := fmt.Sprintf("k%d", len(keys))
			if len(keys) > 0 && rng.IntN(4) == 0 {
				key = keys[rng.IntN(len(keys))] // a duplicate: skipped
			} else {
				keys = append(keys, key)
			}
			cb := c.Charge.Create().SetTenantID(p.TenantID).SetKind(charge.KindCompute).
				SetTokens(billing.Tokens(rng.Int64N(2000) - 500)).SetIdempotencyKey(key)
			switch {
			case p.ProjectID != "":
				cb.SetPayerKind(charge.PayerKindProject).SetProjectID(p.ProjectID)
				if p.TenantID == tn.ID {
					cb.SetUserID(users[rng.IntN(len(users))])
				}
			case rng.IntN(10) == 0:
				cb.SetPayerKind(charge.PayerKindUser) // names no payer
			default:
				cb.SetPayerKind(charge.PayerKindUser).SetUserID(p.UserID)
			}
			return cb
		}
		for round := range 30 {
			var err error
			switch round % 3 {
			case 0:
				err = build().OnConflictColumns(charge.FieldIdempotencyKey).DoNothing().Exec(ctx)
			case 1:
				bulk := make([]*ent.ChargeCreate, 1+rng.IntN(20))
				for i := range bulk {
					bulk[i] = build()
				}
				err = c.Charge.CreateBulk(bulk...).OnConflictColumns(charge.FieldIdempotencyKey).DoNothing().Exec(ctx)
			case 2: // written, then rolled back
				n := len(keys)
				err = tn.DB.InTx(ctx, func(tx *database.Tx) error {
					if err := tx.Ent.Charge.CreateBulk(build(), build()).OnConflictColumns(charge.FieldIdempotencyKey).DoNothing().Exec(ctx); err != nil {
						return err
					}
					return errRollBack
				})
				keys = keys[:n]
				if errors.Is(err, errRollBack) {
					err = nil
				}
			}
			if err != nil && !errors.Is(err, sql.ErrNoRows) { // an insert of duplicates only returns no row
				t.Fatalf("round %d: %v", round, err)
			}
			for _, p := range payers {
				got, err := ledger.BalanceOf(ctx, c, p)
				if err != nil {
					t.Fatal(err)
				}
				if want := summed(t, tn, p); got != want {
					t.Fatalf("round %d: balance of %s = %s, want %s (the sum of its charges)", round, p, got, want)
				}
			}
		}
	})
}

var errRollBack = errors.New("rolled back")

// TestBalancesFilledOnUpgrade: a database of a version before balances
// (charges, no trigger, no balances rows) gets every payer's balance when
// it is migrated, and keeps it from then on.
func TestBalancesFilledOnUpgrade(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		tn := fixture.New(t, url, fixture.TenantOptions{Slug: "alpha"})
		a := tn.AddMember(t, "a")
		p1 := tn.AddProject(t, "p1")
		user, project := ledger.Payer{TenantID: tn.ID, UserID: a.ID}, ledger.Payer{TenantID: tn.ID, ProjectID: p1.ID}
		drop := "DROP TRIGGER charges_balance"
		if tn.DB.Dialect == dialect.Postgres {
			drop += " ON charges"
		}
		for _, q := range []string{drop, "DELETE FROM balances"} {
			if _, err := tn.DB.SQL.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		tn.Grant(t, ledger.Payer{UserID: a.ID}, 5*billing.Unit)
		tn.Grant(t, ledger.Payer{ProjectID: p1.ID}, 3*billing.Unit)
		tn.Grant(t, ledger.Payer{ProjectID: p1.ID}, 4*billing.Unit)
		if b, _ := ledger.BalanceOf(fixture.Sys(), tn.DB.Ent, user); b != 0 {
			t.Fatalf("without the trigger the balance moved (%s): the test proves nothing", b)
		}
		if err := tn.DB.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		tn.Grant(t, ledger.Payer{UserID: a.ID}, 2*billing.Unit)
		for p, want := range map[ledger.Payer]billing.Tokens{user: 7 * billing.Unit, project: 7 * billing.Unit} {
			if got, err := ledger.BalanceOf(fixture.Sys(), tn.DB.Ent, p); err != nil || got != want || got != summed(t, tn, p) {
				t.Errorf("balance of %s = %s, %v; want %s", p, got, err, want)
			}
		}
	})
}
