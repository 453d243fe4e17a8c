package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/dockertest"
)

// BenchmarkFunctions measures serverless functions through the real
// binary and `levers9 run` (e2e/testdata/functions/bench.py does the
// timing in the client and prints JSON):
//
//   - Warm/DIALECT, on the built-in node's process runtime: a .remote() of
//     a no-op on a keep_warm=1 container, p50/p99 over 200 calls after 20
//     to warm up; its same-run baseline is a GraphQL viewer query from the
//     same client (the floor of any request). Then .map() of 10,000 no-op
//     items on containers a first map of 1,000 brought up (items/s, and
//     how long creating the map took); its baseline is the same items as
//     sequential .remote() calls (1/p50), what a loop would get.
//   - ColdStart, on Docker with the Python image: a first call of a new
//     app's function, each phase in ms after the call was queued (median
//     of 3 apps); the baseline is the second call on the warm container
//     (queued to finished).
func BenchmarkFunctions(b *testing.B) {
	for _, dialect := range dbtest.Dialects() {
		b.Run("Warm/"+dialect, func(b *testing.B) {
			s, c := functionsServer(b, dbtest.URL(b, dialect), "process")
			r := benchScript(b, fnEnv(b, s, c.Token), nil, "--mode", "warm")
			b.ReportMetric(0, "ns/op")
			for _, k := range []string{"remote_p50_ms", "remote_p99_ms", "viewer_p50_ms", "viewer_p99_ms",
				"map_items_per_s", "map_create_ms", "sequential_remote_items_per_s"} {
				b.ReportMetric(r[k], metricName(k))
			}
		})
	}
	b.Run("ColdStart/docker", func(b *testing.B) {
		image := dockertest.Python(b)
		s, c := functionsServer(b, dbtest.URL(b, "sqlite"), "docker")
		env := fnEnv(b, s, c.Token)
		var runs []map[string]float64
		for range 3 {
			runs = append(runs, benchScript(b, env, []string{"E2E_IMAGE=" + image}, "--mode", "cold"))
		}
		b.ReportMetric(0, "ns/op")
		for _, p := range []string{"scheduledAt", "imageReadyAt", "codeFetchedAt", "processStartedAt", "importedAt",
			"startedAt", "finishedAt"} {
			if v, ok := median(runs, "cold_"+p); ok {
				b.ReportMetric(v, p+"-ms")
			} else {
				b.Logf("the first calls recorded no %s phase (not reported)", p)
			}
		}
		if v, ok := median(runs, "warm_finishedAt"); ok {
			b.ReportMetric(v, "warm-finishedAt-ms")
		}
	})
}

// benchScript runs bench.py with levers9 run and decodes its last line.
func benchScript(b *testing.B, env, extra []string, args ...string) map[string]float64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fnTimeout)
	defer cancel()
	out, err := fnCommand(ctx, b, env, extra, "bench.py", args...).CombinedOutput()
	if err != nil {
		b.Fatalf("levers9 run bench.py %v: %v\n%s", args, err, out)
	}
	var r map[string]*float64
	if err := json.Unmarshal([]byte(lastJSONLine(string(out))), &r); err != nil {
		b.Fatalf("bench.py printed %q: %v", out, err)
	}
	res := map[string]float64{}
	for k, v := range r {
		if v != nil { // null: a phase the call did not record
			res[k] = *v
		}
	}
	return res
}

func metricName(k string) string {
	switch k {
	case "map_items_per_s":
		return "map-items/s"
	case "sequential_remote_items_per_s":
		return "sequential-remote-items/s"
	}
	return strings.ReplaceAll(k, "_", "-")
}

// median is the median of key over the runs that have it.
func median(runs []map[string]float64, key string) (float64, bool) {
	var xs []float64
	for _, r := range runs {
		if v, ok := r[key]; ok {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return 0, false
	}
	slices.Sort(xs)
	return xs[len(xs)/2], true
}
