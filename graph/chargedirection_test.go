package graph_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/viewer"
)

// TestChargeDirection: a grant reads as a CREDIT of a positive amount that
// raises the balance, a compute charge as a DEBIT that lowers it; the
// stored signed tokens field keeps its meaning.
func TestChargeDirection(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		e := newEnv(t, url)
		a := e.newTenant("alpha")
		r := e.gql(a.adminToken, `mutation($in: GrantTokensInput!) { grantTokens(input: $in) { amount direction balanceChange tokens } }`,
			vars{"in": vars{"userID": a.member.ID, "tokens": "500", "reason": "welcome"}})
		r.ok(t)
		type entry struct {
			Amount        json.Number
			Direction     string
			BalanceChange json.Number
			Tokens        json.Number
		}
		var granted struct{ GrantTokens entry }
		r.decode(t, &granted)
		if want := (entry{"500", "CREDIT", "500", "-500"}); granted.GrantTokens != want {
			t.Fatalf("grantTokens answered %+v, want %+v", granted.GrantTokens, want)
		}
		sys := viewer.SystemContext(context.Background())
		e.db.Ent.Charge.Create().SetTenantID(a.ent.ID).SetPayerKind(charge.PayerKindUser).SetUserID(a.member.ID).
			SetKind(charge.KindCompute).SetTokens(95_914_000).SetReason("vision").SetIdempotencyKey("test:vision").ExecX(sys)

		r = e.gql(a.memberToken, `{ viewer { balance } charges(first: 10, orderBy: {field: CREATED_AT, direction: ASC}) {
			edges { node { kind amount direction balanceChange tokens } } } }`, nil)
		r.ok(t)
		var out struct {
			Viewer  struct{ Balance json.Number }
			Charges struct {
				Edges []struct {
					Node struct {
						Kind string
						entry
					}
				}
			}
		}
		r.decode(t, &out)
		want := map[string]entry{
			"GRANT":   {"500", "CREDIT", "500", "-500"},
			"COMPUTE": {"95.914", "DEBIT", "-95.914", "95.914"},
		}
		if len(out.Charges.Edges) != len(want) {
			t.Fatalf("member sees %d charges, want %d", len(out.Charges.Edges), len(want))
		}
		var sum billing.Tokens
		for _, ed := range out.Charges.Edges {
			if ed.Node.entry != want[ed.Node.Kind] {
				t.Errorf("%s charge reads %+v, want %+v", ed.Node.Kind, ed.Node.entry, want[ed.Node.Kind])
			}
			ch, err := billing.ParseTokens(ed.Node.BalanceChange.String())
			if err != nil {
				t.Fatal(err)
			}
			sum += ch
		}
		// The balance is the sum of the balance changes.
		if sum.String() != out.Viewer.Balance.String() || sum.String() != "404.086" {
			t.Fatalf("balance %s, balance changes sum to %s", out.Viewer.Balance, sum)
		}
	})
}
