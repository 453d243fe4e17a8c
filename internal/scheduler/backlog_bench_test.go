package scheduler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
)

// BenchmarkFullQueuePass measures the pass a job's end asks for when its
// queue's only node is full and jobs wait behind it (none fits): the pass
// reads a page of the waiting jobs, looks for the smallest request of the
// whole queue and notes the jobs waiting. It runs with 100 and with 10,000
// jobs waiting: a pass that did not grow with the backlog would take the
// same time at both. (The smallest request is read off two indexes and a
// backlogged queue's jobs are not noted again; on PostgreSQL the figure
// at 10,000 still includes its planner's choices on the statistics of
// the jobs just inserted, as in a burst.)
func BenchmarkFullQueuePass(b *testing.B) {
	for _, d := range dbtest.Dialects() {
		b.Run(d, func(b *testing.B) {
			f := newFixture(b, dbtest.URL(b, d))
			f.addNode(b, "full", inv(4, 16*gib, nil), true, f.queue)
			s := f.scheduler(f.db)
			const passes = 20
			var perPass [2]float64
			for i, waiting := range []int{100, 10000} {
				resetJobs(b, f)
				specs := make([]jobSpec, waiting)
				for k := range specs {
					specs[k] = jobSpec{queue: f.queue, created: t0.Add(time.Duration(k) * time.Millisecond), services: []svc{{cpu: 8, mem: 32 * gib}}}
				}
				f.addJobs(b, specs)
				ctx := context.Background()
				if _, err := s.ScheduleQueue(ctx, f.queue); err != nil { // notes them all waiting
					b.Fatal(err)
				}
				start := time.Now()
				for range passes {
					placed, err := s.ScheduleQueue(ctx, f.queue)
					if err != nil || placed != 0 {
						b.Fatalf("placed %d: %v", placed, err)
					}
				}
				perPass[i] = float64(time.Since(start).Microseconds()) / 1000 / passes
				b.ReportMetric(perPass[i], fmt.Sprintf("ms/pass(%d-waiting)", waiting))
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(perPass[1]/perPass[0], "ratio(10000/100)")
		})
	}
}
