package nodes_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/metering"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/viewer"
)

// A node that stops heartbeating 5 s into a job: once liveness gives up on
// it, the job is billed those 5 s (to its last heartbeat), not through the
// TTL it took to notice, and the last charge says so. This holds whether
// the job fails or is requeued; a job that ends normally on a live node is
// billed to its end as before.
//
// With a grace of a minute the meter charges the job's first minute while
// the node is silent; that is refunded down to the 5 s.
func TestLostNodeBilledToLastHeartbeat(t *testing.T) {
	t.Parallel()
	for _, grace := range []time.Duration{0, time.Minute} {
		t.Run(grace.String(), func(t *testing.T) {
			t.Parallel()
			dbtest.Each(t, func(t *testing.T, url string) { checkLostBilling(t, url, grace) })
		})
	}
}

func checkLostBilling(t *testing.T, url string, grace time.Duration) {
	w := newWorld(t, url)
	const price = 6 * billing.Unit // a CPU-minute: 0.1 a second
	err := w.db.Ent.Queue.Update().Where(queue.Name(tenancy.DefaultQueue)).
		SetCPUPrice(price).SetMemoryPrice(0).SetStartFee(0).SetMultiplier(1).ClearGpuPrices().Exec(w.sys)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&ledger.Service{DB: w.db}).Grant(w.admin, ledger.Payer{UserID: viewer.FromContext(w.admin).UserID}, 1000*billing.Unit, "test"); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 1, 13, 2, 0, 0, time.UTC)
	dead, alive := w.join(t, "dead"), w.join(t, "alive")
	lastBeat := start.Add(5 * time.Second)
	for _, id := range []string{dead, alive} {
		if err := w.db.Ent.Node.UpdateOneID(id).SetStatus(node.StatusOnline).SetLastHeartbeatAt(lastBeat).Exec(w.sys); err != nil {
			t.Fatal(err)
		}
	}
	failed, requeued := w.running(t, dead, 0, start), w.running(t, dead, 1, start)
	normal := w.running(t, alive, 0, start)

	now := start.Add(36 * time.Second) // just past the TTL
	// The live node keeps beating; the job on it ends normally.
	if err := w.db.Ent.Node.UpdateOneID(alive).SetLastHeartbeatAt(now).Exec(w.sys); err != nil {
		t.Fatal(err)
	}
	if err := w.jobs.MarkEnded(context.Background(), normal, job.StatusComplete, "exit 0", now); err != nil {
		t.Fatal(err)
	}
	l := &nodes.Liveness{DB: w.db, Jobs: w.jobs, Bus: w.bus, Log: w.log, Now: func() time.Time { return now },
		TTL: 30 * time.Second, Grace: grace, Heard: start, MaxGap: time.Hour}
	res, err := l.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Offline != 1 {
		t.Fatalf("sweep past the TTL: %+v", res)
	}
	if grace > 0 {
		// The meter runs a minute after the start, the node silent, and
		// charges the first minute; the job is lost after the grace.
		m := &metering.Meter{DB: w.db, Log: w.log, Now: func() time.Time { return start.Add(61 * time.Second) }}
		if _, err := m.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
		now = now.Add(grace)
		if err := w.db.Ent.Node.UpdateOneID(alive).SetLastHeartbeatAt(now).Exec(w.sys); err != nil {
			t.Fatal(err)
		}
		if res, err = l.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if res.Failed != 1 || res.Requeued != 1 {
		t.Fatalf("sweep: %+v", res)
	}
	j, err := w.db.Ent.Job.Get(w.sys, failed)
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != job.StatusError || j.StatusReason != jobs.ReasonNodeLost {
		t.Fatalf("job on the dead node: %s (%s)", j.Status, j.StatusReason)
	}
	for _, c := range []struct {
		id     string
		billed time.Duration
		reason string
	}{
		{failed, 5 * time.Second, lostReason},
		{requeued, 5 * time.Second, lostReason},
		{normal, 36 * time.Second, ""},
	} {
		cs, err := w.db.Ent.Charge.Query().Where(charge.JobID(c.id), charge.KindIn(charge.KindCompute, charge.KindAdjustment)).All(w.sys)
		if err != nil {
			t.Fatal(err)
		}
		var total billing.Tokens
		var reasons []string
		for _, ch := range cs {
			total += ch.Tokens
			if ch.Reason != "" {
				reasons = append(reasons, ch.Reason)
			}
		}
		if want := billing.RunCost(price, c.billed); total != want {
			t.Errorf("job %s: charged %v in all; want %v, for %v", c.id, total, want, c.billed)
		}
		if len(reasons) != 0 && c.reason == "" || len(reasons) != 1 && c.reason != "" || c.reason != "" && !strings.HasPrefix(reasons[0], c.reason) {
			t.Errorf("job %s: charge reasons %q, want one saying %q", c.id, reasons, c.reason)
		}
	}
}

const lostReason = "node lost: billed to its last sign of life at 2026-03-01T13:02:05Z"
