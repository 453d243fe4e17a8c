package e2e

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
)

// twoServiceJob submits a job of two `true` services; callers add the
// selection.
const twoServiceJob = `mutation { submitJob(spec: {queue: "default", services: [{name: "a", command: ["true"], cpu: 0.1, memoryMiB: 16}, {name: "b", command: ["true"], cpu: 0.1, memoryMiB: 16}]})`

// BenchmarkThroughput measures end-to-end throughput on the built-in node
// of the real server binary (process runtime): one client submits 1,000
// trivial jobs one after another over a kept-alive connection, without
// following them, and the figure runs from the first submission to the
// end of the last job; then the same with 200 two-service jobs. Beside it,
// the same-run baseline: the same number of `true` processes started one
// after another by this process (the machine's floor for starting a
// program, without any scheduling, isolation or bookkeeping). With
// BENCH_PPROF_ADDR set the server serves its profiler there:
//
//	BENCH_PPROF_ADDR=127.0.0.1:6060 go test ./e2e -run '^$' -bench Throughput/sqlite &
//	go tool pprof -top 'http://127.0.0.1:6060/debug/pprof/profile?seconds=5'
func BenchmarkThroughput(b *testing.B) {
	for _, dialect := range dbtest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			var env []string
			if addr := os.Getenv("BENCH_PPROF_ADDR"); addr != "" { // profile the server while it runs
				env = append(env, "LEVERS9_PPROF_ADDR="+addr)
			}
			s := startServer(b, b.TempDir(), dbtest.URL(b, dialect), env...)
			token := s.credentials().Token
			waitLocalNode(b, s.URL, token)
			for range 10 { // warm up
				runTrivial(b, s.URL, token)
			}
			one := drainSequential(b, s.URL, token, trivialJob, 1000)
			two := drainSequential(b, s.URL, token, twoServiceJob, 200)
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(one, "jobs/s(1000-sequential)")
			b.ReportMetric(two, "jobs/s(200-two-service)")
			b.ReportMetric(spawnRate(b, 1000), "baseline-true-processes/s")
			s.stop()
		})
	}
}

// drainSequential submits jobs jobs one after another from one client,
// waits until none is pending or running, checks that every one
// completed, and returns jobs per second from the first submission to the
// last end. The wait polls the count every 20 ms (the benchmark's own
// clock, off the server's path).
func drainSequential(b *testing.B, base, token, submit string, jobs int) float64 {
	b.Helper()
	var before struct{ Jobs struct{ TotalCount int } }
	gql(b, base, token, `{ jobs(where: {status: COMPLETE}) { totalCount } }`, nil, &before)
	start := time.Now()
	for range jobs {
		gql(b, base, token, submit+` { id } }`, nil, &map[string]any{})
	}
	for {
		var out struct{ Jobs struct{ TotalCount int } }
		gql(b, base, token, `{ jobs(where: {statusIn: [PENDING, RUNNING]}) { totalCount } }`, nil, &out)
		if out.Jobs.TotalCount == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(start)
	var after struct{ Jobs struct{ TotalCount int } }
	gql(b, base, token, `{ jobs(where: {status: COMPLETE}) { totalCount } }`, nil, &after)
	if got := after.Jobs.TotalCount - before.Jobs.TotalCount; got != jobs {
		b.Fatalf("%d of %d jobs completed", got, jobs)
	}
	return float64(jobs) / elapsed.Seconds()
}

// spawnRate starts n `true` processes one after another and returns how
// many a second.
func spawnRate(b *testing.B, n int) float64 {
	b.Helper()
	start := time.Now()
	for range n {
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
	}
	return float64(n) / time.Since(start).Seconds()
}
