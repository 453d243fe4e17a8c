package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
)

// BenchmarkPythonSDK measures the Python SDK against the real server
// binary: sequential submit_job calls per second, and the time from
// calling submit_job to the first log line arriving through
// job.logs(follow=True) on the built-in local node
// (sdk/python/benchmarks/bench.py).
func BenchmarkPythonSDK(b *testing.B) {
	python := requirePython(b)
	for _, dialect := range dbtest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			s := startServer(b, b.TempDir(), dbtest.URL(b, dialect))
			token := s.credentials().Token
			waitLocalNode(b, s.URL, token)
			out, err := runPython(b, python, s.URL, token, "benchmarks/bench.py", "500", "50")
			if err != nil {
				b.Fatalf("bench.py: %v\n%s", err, out)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			var r struct {
				SubmitPerS     float64 `json:"submit_per_s"`
				FirstLineP50Ms float64 `json:"first_line_ms_p50"`
				FirstLineP99Ms float64 `json:"first_line_ms_p99"`
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
				b.Fatalf("bench.py printed %q: %v", out, err)
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(r.SubmitPerS, "submit_job/s")
			b.ReportMetric(r.FirstLineP50Ms, "p50-first-line-ms")
			b.ReportMetric(r.FirstLineP99Ms, "p99-first-line-ms")
			s.stop()
		})
	}
}
