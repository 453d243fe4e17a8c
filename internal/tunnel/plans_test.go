package tunnel_test

import (
	"context"
	"testing"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/jobspec"
)

// TestJobPathReadsNoHistory runs jobs through a node with a history (dispatch, the
// agent's reports, ends, failures, logs) on SQLite, then reads the plan of
// every statement the server ran: none may read rows in numbers that grow
// with the server's history (database.HistoryReads).
func TestJobPathReadsNoHistory(t *testing.T) {
	t.Parallel()
	w := newWorld(t, dbtest.SQLiteURL(t))
	st := w.startAgent(t, "n1")
	w.tn.AddHistory(t, st.NodeID, 300)
	ctx := context.Background()
	since, err := w.db.Mark(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, services := range [][]jobspec.Service{
		{{Name: "main", Command: []string{"sh", "-c", "echo hello"}, CPU: 1, MemoryMiB: 64}},
		{
			{Name: "a", Command: []string{"true"}, CPU: 1, MemoryMiB: 64},
			{Name: "b", Command: []string{"sh", "-c", "exit 3"}, CPU: 1, MemoryMiB: 64},
		},
		{{Name: "main", Command: []string{"/no/such/command"}, CPU: 1, MemoryMiB: 64}},
	} {
		j := w.waitEnded(t, w.runOn(t, st.NodeID, services...).ID)
		if j.Status == job.StatusPending || j.Status == job.StatusRunning {
			t.Fatalf("job %s did not end", j.ID)
		}
	}
	if stmts := fixture.NoHistoryReads(t, w.db, since); len(stmts) < 20 {
		t.Fatalf("only %d statements ran: the check would prove little", len(stmts))
	}
}
