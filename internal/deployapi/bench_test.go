package deployapi_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/functions"
)

// BenchmarkEndpoint measures warm endpoint requests, one at a time,
// through the server's side: the HTTP front door, the task stored, a Go
// runner (no network to a container, no Python) claiming and answering
// it, the answer replayed. "direct" is the same HTTP round trip to a
// plain handler: the floor. The e2e benchmarks add real containers.
func BenchmarkEndpoint(b *testing.B) {
	body := []byte(`{"x": 1}`)
	b.Run("direct", func(b *testing.B) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			in, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(in)
		}))
		defer srv.Close()
		measure(b, func() (int, error) {
			resp, err := http.Post(srv.URL+"/predict", "application/json", bytes.NewReader(body))
			if err != nil {
				return 0, err
			}
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
			return resp.StatusCode, nil
		})
	})
	for _, d := range dbtest.Dialects() {
		b.Run(d, func(b *testing.B) {
			w := newWorld(b, dbtest.URL(b, d))
			fns := w.deploy(b, "bench", functions.FunctionSpec{Name: "predict", Kind: function.KindENDPOINT, HTTPMethod: "POST", MaxContainers: 1})
			w.serve(b, fns["predict"].ID, echo("bench"))
			measure(b, func() (int, error) {
				req, _ := http.NewRequest(http.MethodPost, w.srv.URL+"/endpoint/predict", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+w.token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return 0, err
				}
				defer resp.Body.Close()
				_, _ = io.Copy(io.Discard, resp.Body)
				return resp.StatusCode, nil
			})
		})
	}
}

// measure runs do b.N times after a warm-up (the first request starts
// the container), and reports requests per second, p50 and p99.
func measure(b *testing.B, do func() (int, error)) {
	for range 3 {
		if status, err := do(); err != nil || status != http.StatusOK {
			b.Fatalf("warm-up: %d %v", status, err)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		t0 := time.Now()
		status, err := do()
		if err != nil || status != http.StatusOK {
			b.Fatalf("%d %v", status, err)
		}
		lat = append(lat, time.Since(t0))
	}
	el := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[min(len(lat)*99/100, len(lat)-1)]
	b.ReportMetric(float64(b.N)/el.Seconds(), "req/s")
	b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
	b.Logf("%d requests: p50 %v, p99 %v", b.N, p50, p99)
}
