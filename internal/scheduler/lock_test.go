package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
)

// A pass on PostgreSQL locks its nodes against other passes and writers
// of the node rows, but not against the key-share lock a transaction
// holds through a foreign key (recording a report on the node's
// services): that transaction does not hold the pass up.
func TestPassLockOfNodes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, dbtest.PostgresURL(t))
	n := f.addNode(t, "n1", inv(4, 4*gib, nil), true, f.queue)
	ids := f.addJobs(t, []jobSpec{cpuJob(f.queue, 1, gib)})
	ctx := context.Background()
	pass := func() (done chan error) {
		done = make(chan error, 1)
		go func() {
			_, err := f.scheduler(f.db).ScheduleQueue(ctx, f.queue)
			done <- err
		}()
		return done
	}
	hold := func(lock string) (release func()) {
		t.Helper()
		tx, err := f.db.SQL.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "SELECT id FROM nodes WHERE id = $1 FOR "+lock, n); err != nil {
			t.Fatal(err)
		}
		return func() { _ = tx.Rollback() }
	}

	release := hold("KEY SHARE")
	done := pass()
	select {
	case err := <-done:
		release()
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		release()
		<-done
		t.Fatal("a pass waited on a key-share lock of its node")
	}
	if got := f.placedOn(t, ids[0]); got != "n1" {
		t.Fatalf("the job is on %q, want n1", got)
	}

	// A writer of the node row (another pass, a node update) holds it,
	// while a second job waits to be placed (a pass with nothing to
	// place reads no node).
	f.addJobs(t, []jobSpec{cpuJob(f.queue, 1, gib)})
	release = hold("NO KEY UPDATE")
	done = pass()
	select {
	case err := <-done:
		release()
		t.Fatalf("a pass ran beside a writer of its node: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
