package functions_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/functions"
)

// BenchmarkMapServerSide measures the server's side of a map of 10,000
// no-op items on one ready container, without a network or Python: the
// map stored, then claimed and settled in batches of 64 as a runner
// does, then read back in order. Items per second are the ceiling the
// database puts on .map().
func BenchmarkMapServerSide(b *testing.B) {
	for _, d := range dbtest.Dialects() {
		b.Run(d, func(b *testing.B) {
			w := newBenchWorld(b, dbtest.URL(b, d))
			ctx := w.tn.AsAdmin()
			a, err := w.fn.DeployEphemeral(ctx, functions.AppSpec{Name: "bench", CodeHash: codeHash,
				Functions: []functions.FunctionSpec{{Name: "noop", Module: "app", Qualname: "noop", Queue: "default", MaxContainers: 1}}})
			if err != nil {
				b.Fatal(err)
			}
			f := a.Edges.Functions[0]
			const n = 10000
			items := make([]functions.Payload, n)
			for i := range items {
				items[i] = args(fmt.Sprint(i))
			}
			var r *functions.Runner
			b.ResetTimer()
			for k := 0; k < b.N; k++ {
				start := time.Now()
				m, err := w.fn.Map(ctx, f.ID, items)
				if err != nil {
					b.Fatal(err)
				}
				stored := time.Since(start)
				if r == nil {
					r = w.benchRunner(b, w.containers(b, f.ID)[0])
				}
				var done []functions.Outcome
				for {
					got, _, err := w.fn.Claim(context.Background(), r, functions.ClaimRequest{Max: 64, Done: done})
					if err != nil {
						b.Fatal(err)
					}
					if len(got) == 0 {
						break
					}
					done = done[:0]
					for _, c := range got {
						done = append(done, ok(c, "r"))
					}
				}
				_, ts, err := w.fn.MapResults(ctx, m.ID, 0, n, 0)
				if err != nil || len(ts) != n {
					b.Fatalf("%d results, %v", len(ts), err)
				}
				el := time.Since(start)
				b.ReportMetric(float64(n)/el.Seconds(), "items/s")
				b.ReportMetric(float64(stored.Milliseconds()), "store-ms")
			}
		})
	}
}
