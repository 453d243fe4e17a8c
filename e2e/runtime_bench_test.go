package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/dockertest"
)

// BenchmarkRuntimes compares the built-in node's two runtimes on the same
// server build and database (SQLite), one after the other in one run: a
// trivial job (`true`, in a busybox image on Docker) from submission to
// running and to finished, one job at a time, by the server's clock; and
// a burst of trivial jobs submitted by 8 clients and left to drain. The
// process runtime is the same-run baseline for what containers cost.
func BenchmarkRuntimes(b *testing.B) {
	image := dockertest.Busybox(b)
	for _, rt := range []string{"process", "docker"} {
		b.Run(rt, func(b *testing.B) {
			s := startServer(b, b.TempDir(), dbtest.URL(b, "sqlite"),
				"LEVERS9_LOCAL_NODE_RUNTIME="+rt, "LEVERS9_LOCAL_NODE_DEFAULT_IMAGE="+image)
			token := s.credentials().Token
			waitLocalNode(b, s.URL, token)
			submit := trivialJob
			if rt == "docker" {
				submit = fmt.Sprintf(`mutation { submitJob(spec: {queue: "default", services: [{name: "main", image: %q, command: ["true"], cpu: 0.1, memoryMiB: 16}]})`, image)
			}
			for range 3 { // warm up
				runJob(b, s.URL, token, submit)
			}
			var running, done []time.Duration
			for range 40 {
				r, d := runJob(b, s.URL, token, submit)
				running, done = append(running, r), append(done, d)
			}
			const jobs, clients = 100, 8
			burst := runBurst(b, s.URL, token, submit, jobs, clients)
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(ms(percentile(running, 50)), "p50-running-ms")
			b.ReportMetric(ms(percentile(running, 99)), "p99-running-ms")
			b.ReportMetric(ms(percentile(done, 50)), "p50-finished-ms")
			b.ReportMetric(ms(percentile(done, 99)), "p99-finished-ms")
			b.ReportMetric(burst, "jobs/s(burst-100)")
			s.stop()
		})
	}
}
