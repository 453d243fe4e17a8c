package nodes_test

import (
	"context"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/tenancy"
)

// TestLiveness: a silent node goes offline after the TTL, which wakes its
// queue's scheduler; after the grace its running jobs fail with "node
// lost", or are requeued when they asked for retries, and jobs placed there
// go back to the scheduler. A sweep with nothing to do changes nothing,
// and Due says so beforehand.
func TestLiveness(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		nodeID := w.join(t, "n1")
		last := time.Now()
		if err := w.db.Ent.Node.UpdateOneID(nodeID).SetStatus(node.StatusOnline).SetLastHeartbeatAt(last).Exec(w.sys); err != nil {
			t.Fatal(err)
		}
		plain := w.running(t, nodeID, 0, last)
		retried := w.running(t, nodeID, 1, last)
		placed := w.submit(t, 0).ID
		w.placeOn(t, placed, nodeID, time.Time{})
		defaultQueue := w.db.Ent.Queue.Query().Where(queue.Name(tenancy.DefaultQueue)).OnlyIDX(w.sys)
		woken, unsubscribe := w.bus.Subscribe(notify.TopicQueue, defaultQueue)
		defer unsubscribe()

		now := last
		l := &nodes.Liveness{DB: w.db, Jobs: w.jobs, Bus: w.bus, Log: w.log, Now: func() time.Time { return now },
			TTL: 30 * time.Second, Grace: time.Minute, Heard: last, MaxGap: time.Hour}
		// Due, read before each sweep, says whether it will change anything.
		sweep := func(at time.Duration) nodes.SweepResult {
			now = last.Add(at)
			due, err := l.Due(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			res, err := l.Sweep(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if due != (res != nodes.SweepResult{}) {
				t.Errorf("at %s Due said %v, and the sweep did %+v", at, due, res)
			}
			return res
		}
		if res := sweep(10 * time.Second); res != (nodes.SweepResult{}) {
			t.Fatalf("within the TTL: %+v", res)
		}
		if res := sweep(31 * time.Second); res.Offline != 1 || res.Failed+res.Requeued != 0 {
			t.Fatalf("past the TTL: %+v", res)
		}
		if n, _ := w.db.Ent.Node.Get(w.sys, nodeID); n.Status != node.StatusOffline {
			t.Fatalf("node is %s", n.Status)
		}
		select {
		case <-woken:
		case <-time.After(5 * time.Second):
			t.Error("the node going offline did not signal its queue")
		}
		if res := sweep(80 * time.Second); res.Failed+res.Requeued != 0 {
			t.Fatalf("within the grace: %+v", res)
		}
		if res := sweep(91 * time.Second); res.Failed != 1 || res.Requeued != 2 {
			t.Fatalf("past the grace: %+v", res)
		}
		j, _ := w.db.Ent.Job.Get(w.sys, plain)
		if j.Status != job.StatusError || j.StatusReason != jobs.ReasonNodeLost {
			t.Errorf("job without retries: %s %q", j.Status, j.StatusReason)
		}
		j, _ = w.db.Ent.Job.Query().Where(job.ID(retried)).WithServices().Only(w.sys)
		if j.Status != job.StatusPending || j.Attempt != 2 || j.StartedAt != nil || j.Edges.Services[0].NodeID != "" || j.Edges.Services[0].DispatchedAt != nil {
			t.Errorf("job with retries: %s attempt %d services %+v", j.Status, j.Attempt, j.Edges.Services[0])
		}
		j, _ = w.db.Ent.Job.Query().Where(job.ID(placed)).WithServices().Only(w.sys)
		if j.Status != job.StatusPending || j.Attempt != 1 || j.Edges.Services[0].NodeID != "" {
			t.Errorf("placed job: %s attempt %d node %q", j.Status, j.Attempt, j.Edges.Services[0].NodeID)
		}
		if res := sweep(200 * time.Second); res != (nodes.SweepResult{}) {
			t.Errorf("second sweep changed things: %+v", res)
		}
	})
}

// A job lost with its node after its start was sent (services may have run
// and logged) is requeued as a new attempt, so the next run's lines never
// collide with the lost run's; one never sent keeps its attempt.
func TestLivenessSentStartIsANewAttempt(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		nodeID := w.join(t, "n1")
		last := time.Now()
		if err := w.db.Ent.Node.UpdateOneID(nodeID).SetStatus(node.StatusOnline).SetLastHeartbeatAt(last).Exec(w.sys); err != nil {
			t.Fatal(err)
		}
		sent, unsent := w.submit(t, 0).ID, w.submit(t, 0).ID
		w.placeOn(t, sent, nodeID, last)
		w.placeOn(t, unsent, nodeID, time.Time{})
		l := &nodes.Liveness{DB: w.db, Jobs: w.jobs, Bus: w.bus, Log: w.log, Now: func() time.Time { return last.Add(time.Hour) },
			TTL: 30 * time.Second, Grace: time.Minute, Heard: last, MaxGap: 2 * time.Hour}
		for range 2 { // offline, then past the grace
			if _, err := l.Sweep(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			id      string
			attempt int
		}{{sent, 2}, {unsent, 1}} {
			j, err := w.db.Ent.Job.Query().Where(job.ID(c.id)).WithServices().Only(w.sys)
			if err != nil {
				t.Fatal(err)
			}
			if j.Status != job.StatusPending || j.Attempt != c.attempt || j.Edges.Services[0].Status != service.StatusPending {
				t.Errorf("job %s: %s attempt %d %q; want PENDING attempt %d", c.id, j.Status, j.Attempt, j.StatusReason, c.attempt)
			}
		}
	})
}

// TestLivenessCountsOnlyHeardTime: a node's silence counts only while the
// control plane could hear it. A server started long after the node's last
// heartbeat, and one whose database could not be read, give every node a
// full TTL and grace again before it is offline or its jobs are lost.
func TestLivenessCountsOnlyHeardTime(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		nodeID := w.join(t, "n1")
		last := time.Now()
		if err := w.db.Ent.Node.UpdateOneID(nodeID).SetStatus(node.StatusOnline).SetLastHeartbeatAt(last).Exec(w.sys); err != nil {
			t.Fatal(err)
		}
		id := w.running(t, nodeID, 0, last)
		now := last
		// No Heard: the server starts (its first check) ten minutes after
		// the node's last heartbeat, as after an outage.
		l := &nodes.Liveness{DB: w.db, Jobs: w.jobs, Bus: w.bus, Log: w.log, Now: func() time.Time { return now },
			TTL: 30 * time.Second, Grace: time.Minute}
		restart := last.Add(10 * time.Minute)
		check := func(ctx context.Context, at time.Time) nodes.SweepResult {
			t.Helper()
			now = at
			c, err := l.Check(ctx)
			if err != nil {
				t.Fatal(err)
			}
			res, err := l.Sweep(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if c.Due != (res != nodes.SweepResult{}) {
				t.Errorf("at %s the check said %v, and the sweep did %+v", at.Sub(last), c.Due, res)
			}
			return res
		}
		ctx := context.Background()
		for s := 0; s <= 29; s += 7 {
			if res := check(ctx, restart.Add(time.Duration(s)*time.Second)); res != (nodes.SweepResult{}) {
				t.Fatalf("%d s after the restart: %+v", s, res)
			}
		}
		// The database cannot be read (a cancelled context fails every
		// statement, as a stopped PostgreSQL does) 32 s after the restart,
		// and answers again 40 s later: a new stretch.
		now = restart.Add(32 * time.Second)
		dead, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := l.Check(dead); err == nil {
			t.Fatal("a check on a cancelled context succeeded")
		}
		back := restart.Add(72 * time.Second)
		for s := 0; s <= 28; s += 7 {
			if res := check(ctx, back.Add(time.Duration(s)*time.Second)); res != (nodes.SweepResult{}) {
				t.Fatalf("%d s after the database came back: %+v", s, res)
			}
		}
		if res := check(ctx, back.Add(31*time.Second)); res.Offline != 1 {
			t.Fatalf("a TTL after the database came back: %+v", res)
		}
		for s := 38; s <= 87; s += 7 {
			if res := check(ctx, back.Add(time.Duration(s)*time.Second)); res != (nodes.SweepResult{}) {
				t.Fatalf("%d s after the database came back, within the grace: %+v", s, res)
			}
		}
		if res := check(ctx, back.Add(92*time.Second)); res.Failed != 1 {
			t.Fatalf("a TTL and grace after the database came back: %+v", res)
		}
		if j, _ := w.db.Ent.Job.Get(w.sys, id); j.Status != job.StatusError || j.StatusReason != jobs.ReasonNodeLost {
			t.Errorf("job: %s %q", j.Status, j.StatusReason)
		}
	})
}
