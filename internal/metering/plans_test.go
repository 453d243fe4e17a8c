package metering_test

import (
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
// minutes their payers hold without reading every job ever run
// (database.HistoryReads).
func TestMeterReadsNoHistory(t *testing.T) {
	t.Parallel()
	f := newFixture(t, dbtest.SQLiteURL(t), tenant.BudgetPolicyStop)
	f.grant(t, 1000*billing.Unit)
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
	// Known, and the one read allowed: a payer's balance is the sum of
	// every charge it ever had (ledger.BalanceOf). A balance kept with
	// each charge would bound it; until then this test names it, and
	// fails when it changes or another appears.
	_, reads := fixture.HistoryReadsSince(t, f.db, since)
	for q, r := range reads {
		if !strings.HasPrefix(q, "SELECT SUM(`charges`.`tokens`)") {
			t.Errorf("%s: %.300s", strings.Join(r, "; "), q)
		}
	}
	if len(reads) != 1 {
		t.Errorf("%d statements read history, want only the ledger's balance: %v", len(reads), reads)
	}
}
