package ledger

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/balance"
	"github.com/levers9/levers9/internal/billing"
)

// LockedBalanceOf locks payer p's balance until the end of the transaction
// of c, then reads it. Code that decides on a balance what to commit it to
// (admitting a job, starting one, holding a minute) locks it first, so two
// such decisions on one payer take turns instead of both spending the same
// tokens. On PostgreSQL this is a row lock on the payer's balances row, the
// one every charge's trigger updates (a charge inserted meanwhile waits
// too); on SQLite, with one writer, the statement takes the write lock. A
// payer never charged has no row and a zero balance: nothing paid is
// admitted on it, so nothing needs the lock.
func LockedBalanceOf(ctx context.Context, c *ent.Client, p Payer) (billing.Tokens, error) {
	if p.TenantID == "" {
		return 0, fmt.Errorf("locking the balance of %s: no tenant", p)
	}
	// Balances are written by the charges' trigger only (their privacy
	// policy refuses ent's mutations): the lock is a statement of its own
	// that changes nothing.
	q := fmt.Sprintf("UPDATE %s SET %s = %s WHERE %s = $1", balance.Table, balance.FieldTokens, balance.FieldTokens, balance.FieldID)
	if _, err := c.ExecContext(ctx, q, p.key()); err != nil {
		return 0, fmt.Errorf("locking the balance of %s: %w", p, err)
	}
	return BalanceOf(ctx, c, p)
}
