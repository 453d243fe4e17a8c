package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/tenancy"
)

// The idle sweep runs every minute, idle or not: on a server with a
// history, none of its statements reads every job or service the server
// ever had (database.HistoryReads), when it warns and when it stops.
func TestIdleSweepReadsNoHistory(t *testing.T) {
	t.Parallel()
	m := newMachine(t, dbtest.SQLiteURL(t))
	m.tn.AddHistory(t, m.node, 300)
	m.setIdleTimeout(t, m.tn.DefaultQueue, 30*time.Minute)
	m.runningOn(t, tenancy.DefaultQueue, true)
	m.runningOn(t, tenancy.DefaultQueue, false)
	for _, step := range []struct {
		at              time.Duration
		warned, stopped int
	}{{25 * time.Minute, 1, 0}, {30 * time.Minute, 0, 1}} {
		since, err := m.tn.DB.Mark(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		m.sweepAt(t, step.at, step.warned, step.stopped)
		if stmts := fixture.NoHistoryReads(t, m.tn.DB, since); len(stmts) < 2 {
			t.Fatalf("sweep at %v: only %d statements ran", step.at, len(stmts))
		}
	}
}
