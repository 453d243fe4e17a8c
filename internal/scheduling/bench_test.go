package scheduling

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// benchInput is a large queue: 1,000 nodes (40% CPU-only, the rest with
// 8 GPUs of one type, some already busy) and 10,000 pending jobs (40%
// CPU-only, the rest asking for 1–8 GPUs with preference lists).
func benchInput() ([]Node, []Job) {
	rng := rand.New(rand.NewPCG(1, 2))
	types := []string{"H100", "A100", "L4"}
	nodes := make([]Node, 1000)
	for i := range nodes {
		n := Node{ID: fmt.Sprintf("node_%04d", i), Name: fmt.Sprintf("node-%d", i)}
		if i%5 < 2 {
			n.Capacity = Resources{CPU: 64, MemoryMiB: 256 << 10}
			n.Used = Resources{CPU: float64(rng.IntN(32)), MemoryMiB: rng.Int64N(128) << 10}
		} else {
			t := types[rng.IntN(len(types))]
			n.Capacity = Resources{CPU: 96, MemoryMiB: 1 << 20, GPUs: map[string]int{t: 8}}
			n.Used = Resources{CPU: float64(rng.IntN(48)), MemoryMiB: rng.Int64N(512) << 10, GPUs: map[string]int{t: rng.IntN(5)}}
		}
		nodes[i] = n
	}
	jobs := make([]Job, 10000)
	for i := range jobs {
		j := Job{ID: fmt.Sprintf("job_%05d", i), Priority: rng.IntN(3), Submitted: t0.Add(time.Duration(rng.IntN(3600)) * time.Second)}
		gpu := rng.IntN(5) >= 2
		for k := range 1 + rng.IntN(4) {
			s := Service{Name: fmt.Sprintf("svc-%d", k), CPU: float64(1 + rng.IntN(8)), MemoryMiB: int64(1+rng.IntN(32)) << 10}
			if gpu && (k == 0 || rng.IntN(3) == 0) {
				s.GPUs = 1 + rng.IntN(4)
				s.GPUTypes = randomList(rng, types)
			}
			j.Services = append(j.Services, s)
		}
		jobs[i] = j
	}
	return nodes, jobs
}

// BenchmarkSchedule is one scheduling pass over a large queue.
func BenchmarkSchedule(b *testing.B) {
	nodes, jobs := benchInput()
	placements := 0
	b.ReportAllocs()
	for b.Loop() {
		placed, _, err := Schedule(jobs, nodes)
		if err != nil {
			b.Fatal(err)
		}
		placements += len(placed)
	}
	b.ReportMetric(float64(placements)/float64(b.N), "placed/op")
	b.ReportMetric(float64(placements)/b.Elapsed().Seconds(), "placements/s")
	b.ReportMetric(float64(len(jobs)*b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkScheduleImages is BenchmarkSchedule with images: nodes run
// containers and each holds 0–3 of 50 blueprint images; half the services
// run one of them.
func BenchmarkScheduleImages(b *testing.B) {
	nodes, jobs := benchInput()
	rng := rand.New(rand.NewPCG(3, 4))
	image := func() string { return fmt.Sprintf("levers9-bp/tn_1:%02d", rng.IntN(50)) }
	for i := range nodes {
		nodes[i].Containers = true
		for range rng.IntN(4) {
			nodes[i].Images = append(nodes[i].Images, image())
		}
	}
	for i := range jobs {
		for k := range jobs[i].Services {
			if rng.IntN(2) == 0 {
				jobs[i].Services[k].Image = image()
			}
		}
	}
	placements := 0
	b.ReportAllocs()
	for b.Loop() {
		placed, _, err := Schedule(jobs, nodes)
		if err != nil {
			b.Fatal(err)
		}
		placements += len(placed)
	}
	b.ReportMetric(float64(placements)/float64(b.N), "placed/op")
	b.ReportMetric(float64(len(jobs)*b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkPlace is one job against 1,000 nodes, as a worker placing jobs
// one at a time would call it.
func BenchmarkPlace(b *testing.B) {
	nodes, jobs := benchInput()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, _, _, err := Place(jobs[i%len(jobs)], nodes); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
