package nodes_test

import (
	"context"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/nodes"
)

// The liveness check and sweep run every few seconds, idle or not: on a
// node with a history, none of their statements reads every service or job
// the server ever had (database.HistoryReads).
func TestLivenessReadsNoHistory(t *testing.T) {
	t.Parallel()
	w := newWorld(t, dbtest.SQLiteURL(t))
	nodeID := w.join(t, "n1")
	w.tn.AddHistory(t, nodeID, 300)
	last := time.Now().Add(-time.Hour)
	if err := w.db.Ent.Node.UpdateOneID(nodeID).SetStatus(node.StatusOffline).SetLastHeartbeatAt(last).Exec(w.sys); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	since, err := w.db.Mark(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l := &nodes.Liveness{DB: w.db, Jobs: w.jobs, Bus: w.bus, Log: w.log, Now: time.Now, TTL: 30 * time.Second, Grace: time.Minute,
		Heard: time.Now().Add(-time.Hour), MaxGap: 2 * time.Hour}
	if due, err := l.Due(ctx); err != nil || due {
		t.Fatalf("Due = %v, %v; want false: the lost node runs nothing", due, err)
	}
	if _, err := l.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if stmts := fixture.NoHistoryReads(t, w.db, since); len(stmts) < 2 {
		t.Fatalf("only %d statements ran", len(stmts))
	}
}
