package workers_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/inventory"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/scheduler"
)

// BenchmarkHistory measures what a server's history costs the checks that
// run every few seconds, idle or not: the node liveness check (Liveness.Due)
// and the pending-jobs check (PendingQueues). Each runs 300 times on a node that ran no job, then
// again once it has run 5,000: the same-run ratio says whether the cost
// grows with history (1 when it does not).
func BenchmarkHistory(b *testing.B) {
	const history, runs = 5000, 300
	for _, dialect := range dbtest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			w := newWorld(b, dbtest.URL(b, dialect))
			n := w.tn.AddNode(b, fixture.Node{Name: "n1", Inventory: inventory.Inventory{CPUs: 4, MemoryMiB: 1024}, Queues: []string{w.queue}})
			j := w.submit(b, 1) // a live job, placed on the node
			if err := w.db.Ent.Service.Update().Where(service.JobID(j)).SetNodeID(n.ID).Exec(w.sys); err != nil {
				b.Fatal(err)
			}
			// Every node heard from, as on a healthy server: the check finds
			// nothing, after reading what it must.
			if err := w.db.Ent.Node.UpdateOneID(n.ID).SetStatus(node.StatusOnline).SetLastHeartbeatAt(time.Now()).Exec(w.sys); err != nil {
				b.Fatal(err)
			}
			live := &nodes.Liveness{DB: w.db, Log: fixture.Log(), Now: time.Now, TTL: 30 * time.Second, Grace: time.Minute,
				Heard: time.Now().Add(-time.Hour), MaxGap: 2 * time.Hour}
			sched := &scheduler.Service{DB: w.db, Log: fixture.Log(), Now: time.Now}
			reads := []struct {
				name string
				run  func(context.Context) error
			}{
				// Committed: after the warm-up run, each run finds the pass
				// its queue has waiting and writes nothing (for a second,
				// longer than the 300 runs take), in both measurements alike.
				{"liveness", func(ctx context.Context) error { _, err := live.Due(ctx); return err }},
				{"pending", func(ctx context.Context) error { _, err := sched.PendingQueues(ctx); return err }},
			}
			// The reads take turns, so what slows a stretch of time slows
			// each alike.
			measure := func() []time.Duration {
				per := make([]time.Duration, len(reads))
				for range runs {
					for i, r := range reads {
						start := time.Now()
						if err := r.run(context.Background()); err != nil {
							b.Fatal(err)
						}
						per[i] += time.Since(start)
					}
				}
				for i := range per {
					per[i] /= runs
				}
				return per
			}
			// Each phase measures twice and keeps the second: the first
			// reads after the history's writes pay for them (the cache
			// refills, SQLite checkpoints its log) whatever they read.
			measure()
			fresh := measure()
			w.tn.AddHistory(b, n.ID, history)
			if dialect == "postgres" { // as autovacuum soon does after so many writes
				if _, err := w.db.SQL.Exec("VACUUM ANALYZE"); err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC() // not the writes' garbage, collected during the reads
			measure()
			old := measure()
			b.ReportMetric(0, "ns/op")
			for i, r := range reads {
				b.ReportMetric(float64(old[i].Microseconds()), "us/"+r.name+"(5000-jobs-history)")
				b.ReportMetric(float64(fresh[i].Microseconds()), "us/"+r.name+"(no-history)")
			}
		})
	}
}
