package ledger_test

import (
	"testing"

	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/ledger"
)

// TestEntryOf: a grant (stored as a negative charge) reads as a credit of
// a positive amount, a spend as a debit; the signs are an accountant's.
func TestEntryOf(t *testing.T) {
	t.Parallel()
	cases := []struct {
		stored billing.Tokens
		amount billing.Tokens
		dir    ledger.Direction
		change billing.Tokens
		text   string
	}{
		{-500 * billing.Unit, 500 * billing.Unit, ledger.Credit, 500 * billing.Unit, "+500.000"},
		{95_914_000, 95_914_000, ledger.Debit, -95_914_000, "−95.914"},
		{1, 1, ledger.Debit, -1, "−0.000001"},
		{-1_250_000, 1_250_000, ledger.Credit, 1_250_000, "+1.250"},
		{0, 0, ledger.Debit, 0, "0.000"},
	}
	for _, tc := range cases {
		e := ledger.EntryOf(tc.stored)
		if e.Amount != tc.amount || e.Direction != tc.dir || e.BalanceChange() != tc.change || e.String() != tc.text {
			t.Errorf("EntryOf(%d) = %+v change %d %q; want %d %s %d %q",
				tc.stored, e, e.BalanceChange(), e.String(), tc.amount, tc.dir, tc.change, tc.text)
		}
		if e.Amount < 0 {
			t.Errorf("EntryOf(%d) has a negative amount", tc.stored)
		}
	}
	if got := ledger.Plain(-3_750_000); got != "−3.750" {
		t.Errorf("Plain(-3.75) = %q", got)
	}
	if got := ledger.Plain(404_086_000); got != "404.086" {
		t.Errorf("Plain(404.086) = %q", got)
	}
}
