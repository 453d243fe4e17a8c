package scheduler_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
)

// BenchmarkScheduleQueue is one pass over a large queue: 1,000 online nodes
// (40% CPU-only, the rest 8 GPUs of one type) and 10,000 pending jobs (40%
// CPU-only, the rest asking 1–4 GPUs per GPU service from a preference
// list), the shape of the pure scheduler's benchmark. Each iteration
// reseeds the jobs, so every pass places from scratch.
func BenchmarkScheduleQueue(b *testing.B) {
	for _, d := range dbtest.Dialects() {
		b.Run(d, func(b *testing.B) {
			f := newFixture(b, dbtest.URL(b, d))
			seedNodes(b, f, 1000)
			s := f.scheduler(f.db)
			placed := 0
			var took time.Duration
			for b.Loop() {
				b.StopTimer()
				resetJobs(b, f)
				seedJobs(b, f, 10000)
				b.StartTimer()
				start := time.Now()
				n, err := s.ScheduleQueue(context.Background(), f.queue)
				took += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				placed += n
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(placed)/float64(b.N), "placed/op")
			b.ReportMetric(took.Seconds()/float64(b.N), "s/pass")
			b.ReportMetric(float64(placed)/took.Seconds(), "placements/s")
		})
	}
}

func seedNodes(b *testing.B, f *world, count int) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	err := f.db.InTx(f.sys, func(tx *database.Tx) error {
		for start := 0; start < count; start += 500 {
			var nb []*ent.NodeCreate
			for i := start; i < min(start+500, count); i++ {
				gpus := map[string]int(nil)
				cpus, mem := 64.0, int64(256*gib)
				if i%5 >= 2 {
					gpus = map[string]int{gpuTypes[rng.IntN(3)]: 8}
					cpus, mem = 96, 1024*gib
				}
				nb = append(nb, f.nodeCreate(tx.Ent, fmt.Sprintf("node-%04d", i), inv(cpus, mem, gpus), true))
			}
			nodes, err := tx.Ent.Node.CreateBulk(nb...).Save(f.sys)
			if err != nil {
				return err
			}
			ids := make([]string, len(nodes))
			for i, n := range nodes {
				ids[i] = n.ID
			}
			if err := tx.Ent.Queue.UpdateOneID(f.queue).AddNodeIDs(ids...).Exec(f.sys); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

func seedJobs(b *testing.B, f *world, count int) {
	b.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	specs := make([]jobSpec, count)
	for i := range specs {
		j := jobSpec{queue: f.queue, priority: rng.IntN(3), created: t0.Add(time.Duration(rng.IntN(3600)) * time.Second)}
		gpu := rng.IntN(5) >= 2
		for k := range 1 + rng.IntN(4) {
			s := svc{cpu: float64(1 + rng.IntN(8)), mem: int64(1+rng.IntN(32)) * gib}
			if gpu && (k == 0 || rng.IntN(3) == 0) {
				s.gpus = 1 + rng.IntN(4)
				s.types = []string{gpuTypes[rng.IntN(3)], gpuTypes[rng.IntN(3)]}
			}
			j.services = append(j.services, s)
		}
		specs[i] = j
	}
	if err := f.db.InTx(f.sys, func(tx *database.Tx) error { return f.insertJobs(tx, specs, nil) }); err != nil {
		b.Fatal(err)
	}
}

// resetJobs removes the jobs of an earlier iteration.
func resetJobs(b *testing.B, f *world) {
	b.Helper()
	err := f.db.InTx(f.sys, func(tx *database.Tx) error {
		if _, err := tx.Ent.Service.Delete().Where(service.JobIDNEQ("")).Exec(f.sys); err != nil {
			return err
		}
		if _, err := tx.Ent.JobEvent.Delete().Exec(f.sys); err != nil {
			return err
		}
		_, err := tx.Ent.Job.Delete().Where(job.IDNEQ("")).Exec(f.sys)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
}
