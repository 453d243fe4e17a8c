package ledger

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/levers9/levers9/internal/billing"
)

// Direction says which way a charge moved its payer's balance, as an
// accountant says it.
type Direction string

// The directions.
const (
	// Credit adds to the balance: grants, refunds.
	Credit Direction = "CREDIT"
	// Debit takes from it: what jobs and storage cost.
	Debit Direction = "DEBIT"
)

// Entry is one charge as people read it: an amount that is never negative
// and the way it went. The ledger itself stores signed spending (a grant is
// a negative charge); nothing shown to people should make them do that sum.
type Entry struct {
	Amount    billing.Tokens
	Direction Direction
}

// EntryOf reads a charge's stored tokens (positive spends, negative adds).
// A zero charge is a debit of nothing.
func EntryOf(tokens billing.Tokens) Entry {
	if tokens < 0 {
		return Entry{Amount: -tokens, Direction: Credit}
	}
	return Entry{Amount: tokens, Direction: Debit}
}

// BalanceChange is what the entry did to its payer's balance: positive for
// a credit, negative for a debit.
func (e Entry) BalanceChange() billing.Tokens {
	if e.Direction == Credit {
		return e.Amount
	}
	return -e.Amount
}

// String is the entry signed as a statement shows it: "+500.000" for a
// credit, "−95.914" (a real minus sign) for a debit, "0.000" for nothing.
func (e Entry) String() string { return Signed(e.BalanceChange()) }

// Signed formats a change of balance with its sign and at least three
// decimals, so that columns of amounts line up: "+500.000", "−95.914"
// (a real minus sign), "0.000". Amounts are never rounded ("+0.000001").
func Signed(t billing.Tokens) string {
	if t > 0 {
		return "+" + Plain(t)
	}
	return Plain(t)
}

// Plain formats a balance the same way, signed only when negative: a
// balance is a state, not a change.
func Plain(t billing.Tokens) string {
	sign := ""
	if t < 0 {
		sign, t = "−", -t
	}
	whole, frac, _ := strings.Cut(t.String(), ".")
	if len(frac) < 3 {
		frac += strings.Repeat("0", 3-len(frac))
	}
	return sign + whole + "." + frac
}

// IsValid reports whether d is a direction.
func (d Direction) IsValid() bool { return d == Credit || d == Debit }

// MarshalGQL writes d as a GraphQL enum value.
func (d Direction) MarshalGQL(w io.Writer) { _, _ = io.WriteString(w, strconv.Quote(string(d))) }

// UnmarshalGQL reads a GraphQL enum value.
func (d *Direction) UnmarshalGQL(v any) error {
	s, ok := v.(string)
	if !ok || !Direction(s).IsValid() {
		return fmt.Errorf("%v is not a ChargeDirection", v)
	}
	*d = Direction(s)
	return nil
}
