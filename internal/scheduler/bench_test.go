package scheduler_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/scheduling"
)

// BenchmarkScheduleQueue is one pass over a large queue: 1,000 online nodes
// (40% CPU-only, the rest 8 GPUs of one type) and 10,000 pending jobs (40%
// CPU-only, the rest asking 1–4 GPUs per GPU service from a preference
// list), the shape of the pure scheduler's benchmark. Each iteration
// reseeds the jobs, so every pass places from scratch.
//
// The baseline, in the same run and on the same input, is the pure
// placement function (scheduling.Schedule) over all the jobs at once:
// pure-placements/s, and ratio = placements/s ÷ pure-placements/s, the
// figure that holds on a busy machine.
func BenchmarkScheduleQueue(b *testing.B) {
	for _, d := range dbtest.Dialects() {
		b.Run(d, func(b *testing.B) {
			f := newFixture(b, dbtest.URL(b, d))
			nodes := seedNodes(b, f, 1000)
			s := f.scheduler(f.db)
			if testing.Verbose() { // where each pass spends its time
				s.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
			}
			placed, purePlaced := 0, 0
			var took, pureTook time.Duration
			for b.Loop() {
				b.StopTimer()
				resetJobs(b, f)
				jobs := seedJobs(b, f, 10000)
				start := time.Now()
				res, _, err := scheduling.Schedule(jobs, nodes)
				pureTook += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				purePlaced += len(res)
				b.StartTimer()
				start = time.Now()
				n, err := s.ScheduleQueue(context.Background(), f.queue)
				took += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				placed += n
			}
			if placed != purePlaced {
				b.Errorf("the pass placed %d jobs, the pure function %d", placed, purePlaced)
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(placed)/float64(b.N), "placed/op")
			b.ReportMetric(took.Seconds()/float64(b.N), "s/pass")
			b.ReportMetric(float64(placed)/took.Seconds(), "placements/s")
			b.ReportMetric(float64(purePlaced)/pureTook.Seconds(), "pure-placements/s")
			b.ReportMetric((float64(placed)/took.Seconds())/(float64(purePlaced)/pureTook.Seconds()), "ratio")
		})
	}
}

// seedNodes adds count online nodes to the queue and returns them as the
// pure scheduler sees them.
func seedNodes(b *testing.B, f *world, count int) []scheduling.Node {
	b.Helper()
	var out []scheduling.Node
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
				sn := scheduling.Node{ID: n.ID, Name: n.Name, Capacity: scheduling.Resources{CPU: n.Inventory.CPUs, MemoryMiB: n.Inventory.MemoryMiB}}
				for _, g := range n.Inventory.GPUs {
					if sn.Capacity.GPUs == nil {
						sn.Capacity.GPUs, sn.Devices = map[string]int{}, map[string][]string{}
					}
					sn.Capacity.GPUs[g.Type] += g.Count
					sn.Devices[g.Type] = append(sn.Devices[g.Type], g.DeviceIDs()...)
				}
				out = append(out, sn)
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
	return out
}

// seedJobs adds count pending jobs to the queue and returns them as the
// pure scheduler sees them.
func seedJobs(b *testing.B, f *world, count int) []scheduling.Job {
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
	var ids []string
	if err := f.db.InTx(f.sys, func(tx *database.Tx) error { return f.insertJobs(tx, specs, &ids) }); err != nil {
		b.Fatal(err)
	}
	jobs := make([]scheduling.Job, len(specs))
	for i, j := range specs {
		jobs[i] = scheduling.Job{ID: ids[i], Priority: j.priority, Submitted: j.created}
		for k, r := range j.services {
			jobs[i].Services = append(jobs[i].Services, scheduling.Service{
				Name: fmt.Sprintf("s%d", k), CPU: r.cpu, MemoryMiB: r.mem, GPUs: r.gpus, GPUTypes: r.types,
			})
		}
	}
	return jobs
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
