package database

import (
	"context"
	"database/sql"
	"fmt"

	"entgo.io/ent/dialect"
)

// A payer's balance is minus the sum of its charges (internal/ledger). The
// sum is kept in the balances table, one row per payer, by a trigger on
// charges: every inserted charge adds its tokens to its payer's row in the
// inserting transaction, whichever code inserts it, and a charge skipped as
// a duplicate (ON CONFLICT DO NOTHING on its idempotency key) adds nothing.
// Charges are never updated or deleted.

// BalanceKey is the ID of the balances row of payer payerID (a project's or
// a user's ID) in tenant tenantID: the trigger writes the same.
func BalanceKey(tenantID, payerID string) string { return tenantID + balanceKeySep + payerID }

const balanceKeySep = "/"

// chargePayer is a charge's payer's ID, as SQL over the charges row r:
// NULL when the charge names none, and then it belongs to no balance.
func chargePayer(r string) string {
	return fmt.Sprintf("CASE %[1]s.payer_kind WHEN 'PROJECT' THEN %[1]s.project_id ELSE %[1]s.user_id END", r)
}

const balanceTrigger = "charges_balance"

// keepBalances creates the trigger and, when it is new, fills balances from
// the charges so far, in one transaction: on PostgreSQL creating the
// trigger locks out inserts of charges until the commit, so none is
// missed or counted twice while replicas of an earlier version run.
func (db *DB) keepBalances(ctx context.Context) error {
	tx, err := db.SQL.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("keeping balances: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck
	exists := "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name = $1"
	if db.Dialect == dialect.Postgres {
		exists = "SELECT count(*) FROM pg_trigger WHERE tgname = $1 AND tgrelid = 'charges'::regclass"
	}
	var n int
	if err := tx.QueryRowContext(ctx, exists, balanceTrigger).Scan(&n); err != nil {
		return fmt.Errorf("looking for the balances trigger: %w", err)
	}
	if n > 0 {
		return nil
	}
	for _, q := range db.balanceTriggerSQL() {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("creating the balances trigger: %w", err)
		}
	}
	payers, err := fillBalances(ctx, tx)
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("keeping balances: %w", err)
	}
	if payers > 0 {
		db.log.Info("balances filled from the charges so far", "payers", payers)
	}
	return nil
}

// balanceTriggerSQL is the trigger (and on PostgreSQL its function). On
// PostgreSQL it runs once per statement, adding each payer's sum of the
// statement's new charges, in the order of the balances' IDs (so two
// statements lock payers' rows in the same order): the meter's bulk
// insert of a minute's charges updates each payer once, not once a charge.
// SQLite has no statement triggers. Changing the trigger needs a new name
// (keepBalances creates it only when missing).
func (db *DB) balanceTriggerSQL() []string {
	if db.Dialect == dialect.Postgres {
		return []string{
			fmt.Sprintf(`CREATE OR REPLACE FUNCTION %s() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	%s;
	RETURN NULL;
END $$`, balanceTrigger, addSums("new_charges")),
			fmt.Sprintf(`CREATE TRIGGER %[1]s AFTER INSERT ON charges REFERENCING NEW TABLE AS new_charges
FOR EACH STATEMENT EXECUTE FUNCTION %[1]s()`, balanceTrigger),
		}
	}
	payer := chargePayer("NEW")
	return []string{fmt.Sprintf(`CREATE TRIGGER %s AFTER INSERT ON charges FOR EACH ROW WHEN %s IS NOT NULL
BEGIN
	INSERT INTO balances (id, tenant_id, payer_kind, payer_id, tokens)
	VALUES (NEW.tenant_id || '%s' || %[2]s, NEW.tenant_id, NEW.payer_kind, %[2]s, NEW.tokens)
	ON CONFLICT (id) DO UPDATE SET tokens = balances.tokens + excluded.tokens;
END`, balanceTrigger, payer, balanceKeySep)}
}

// addSums adds each payer's sum of the charges in table to its balance.
// Its WHERE also keeps SQLite's parser from reading the upsert's ON as a
// join's.
func addSums(table string) string {
	return fmt.Sprintf(`INSERT INTO balances (id, tenant_id, payer_kind, payer_id, tokens)
	SELECT tenant_id || '%s' || payer, tenant_id, payer_kind, payer, sum(tokens)
	FROM (SELECT tenant_id, payer_kind, %s AS payer, tokens FROM %s c) AS c
	WHERE payer IS NOT NULL
	GROUP BY tenant_id, payer_kind, payer
	ORDER BY 1
	ON CONFLICT (id) DO UPDATE SET tokens = balances.tokens + excluded.tokens`, balanceKeySep, chargePayer("c"), table)
}

// fillBalances writes every payer's sum of the charges so far and returns
// how many payers have one.
func fillBalances(ctx context.Context, tx *sql.Tx) (int64, error) {
	if _, err := tx.ExecContext(ctx, "DELETE FROM balances"); err != nil {
		return 0, fmt.Errorf("filling balances: %w", err)
	}
	res, err := tx.ExecContext(ctx, addSums("charges"))
	if err != nil {
		return 0, fmt.Errorf("filling balances: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}
