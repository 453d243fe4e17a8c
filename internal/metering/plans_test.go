package metering_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/inventory"
)

// The meter runs every minute, whenever jobs run: on a tenant with a
// history of charged jobs, its statements find the open jobs and the
// minutes their payers hold without reading every job ever run or every
// charge ever made (database.HistoryReads).
func TestMeterReadsNoHistory(t *testing.T) {
	t.Parallel()
	f := newFixture(t, dbtest.SQLiteURL(t), tenant.BudgetPolicyStop)
	// The history's 300 jobs are submitted, each committing its start
	// fee while pending, before they are made to have run.
	f.grant(t, 3000*billing.Unit)
	n := f.tn.AddNode(t, fixture.Node{Name: "n1", Inventory: inventory.Inventory{CPUs: 8, MemoryMiB: 8192}, Queues: []string{f.queue.ID}})
	f.tn.AddHistory(t, n.ID, 300)
	j := f.submit(t, 1, 1024, 0)
	if err := f.jobs.MarkRunning(f.sys, j.ID, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(3 * time.Minute)
	since, err := f.db.Mark(f.sys)
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.meter.Tick(f.sys)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.charges(t, j.ID)) == 0 {
		t.Fatalf("the running job was not charged (%+v): the check would prove little", res)
	}
	// The payer's balance is read from its balances row, which the
	// database keeps with each charge, not summed over every charge.
	stmts := fixture.NoHistoryReads(t, f.db, since)
	if !slices.ContainsFunc(stmts, func(q string) bool { return strings.Contains(q, "FROM `balances`") }) {
		t.Errorf("the tick read no balance: the check would prove little; statements: %q", stmts)
	}
}
