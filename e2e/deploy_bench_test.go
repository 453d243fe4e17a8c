package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
)

// Load of the deployment benchmarks: concurrent clients, requests in all.
const (
	benchClients  = 8
	benchRequests = 2000
	benchItems    = 2000
)

// BenchmarkDeploy measures deployments through the real binary, on the
// built-in node's process runtime, per database (dep_bench.py is deployed
// with `levers9 deploy`; the numbers are printed, nothing is asserted):
//
//   - Endpoint: POST /endpoint/bench_echo (a JSON echo on keep_warm
//     containers) from benchClients concurrent clients, benchRequests in
//     all after a warm-up: requests/s and p50/p99. Its same-run baseline
//     is the same JSON round trip to a plain Go handler on loopback (what
//     the runner's own work costs at most): the difference is the
//     server's part (auth, task row, claim, relay, settle, replay).
//   - Queue: benchItems POST /queue/bench_q of no-op items from the same
//     clients (puts/s), then until all are COMPLETE (tasks/s, from the
//     first put to the last completion; and how long the drain lasted
//     after the last put).
func BenchmarkDeploy(b *testing.B) {
	for _, dialect := range dbtest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			s, c := functionsServer(b, dbtest.URL(b, dialect), "process")
			d := newDeployer(b, s, c.Token)
			d.deploy(b, depCopy(b, "dep_bench.py"), "dep_bench.py")
			b.Run("Endpoint", func(b *testing.B) { benchEndpoint(b, d) })
			b.Run("Queue", func(b *testing.B) { benchQueue(b, d) })
		})
	}
}

func benchEndpoint(b *testing.B, d *deployer) {
	client := benchClient()
	url := d.s.URL + "/endpoint/bench_echo"
	// The first call may find the containers still starting.
	deadline := time.Now().Add(fnTimeout)
	for {
		if r := d.callEndpoint(b, http.MethodPost, "/endpoint/bench_echo", map[string]any{"i": -1}); r.Status == http.StatusOK {
			break
		} else if time.Now().After(deadline) {
			b.Fatalf("bench_echo: %s", r)
		}
		time.Sleep(time.Second)
	}
	load(b, client, url, d.token, 200) // warm-up: connections, both containers
	through := load(b, client, url, d.token, benchRequests)

	direct := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v any
		if err := json.NewDecoder(r.Body).Decode(&v); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}))
	defer direct.Close()
	load(b, client, direct.URL, "", 200)
	base := load(b, client, direct.URL, "", benchRequests)

	b.ReportMetric(0, "ns/op")
	through.report(b, "endpoint")
	base.report(b, "direct")
}

// loadResult is one run of load.
type loadResult struct {
	perSecond, p50, p99 float64 // p50, p99 in ms
}

func (r loadResult) report(b *testing.B, name string) {
	b.ReportMetric(r.perSecond, name+"-req/s")
	b.ReportMetric(r.p50, name+"-p50-ms")
	b.ReportMetric(r.p99, name+"-p99-ms")
}

// benchClient keeps a connection per concurrent client.
func benchClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = benchClients
	return &http.Client{Transport: tr, Timeout: fnTimeout}
}

// load sends n POSTs of a small JSON object to url from benchClients
// goroutines; every answer must be 200 with the object echoed.
func load(b *testing.B, client *http.Client, url, token string, n int) loadResult {
	b.Helper()
	var next atomic.Int64
	lat := make([]time.Duration, n)
	var mu sync.Mutex
	var failure error
	var wg sync.WaitGroup
	start := time.Now()
	for range benchClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				body := fmt.Sprintf(`{"i":%d,"text":"a small JSON object, as an endpoint gets"}`, i)
				t0 := time.Now()
				got, err := postJSON(client, url, token, body)
				lat[i] = time.Since(t0)
				if err == nil && !sameJSON(got, []byte(body)) {
					err = fmt.Errorf("answer %q to %q", got, body)
				}
				if err != nil {
					mu.Lock()
					failure = err
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if failure != nil {
		b.Fatalf("%s: %v", url, failure)
	}
	return loadResult{perSecond: float64(n) / elapsed.Seconds(), p50: ms(percentile(lat, 50)), p99: ms(percentile(lat, 99))}
}

// postJSON POSTs body and returns the answer's body; a status other than
// 200 is an error.
func postJSON(client *http.Client, url, token, body string, header ...string) ([]byte, error) {
	return postStatus(client, url, token, body, http.StatusOK, header...)
}

func postStatus(client *http.Client, url, token, body string, want int, header ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), fnTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader([]byte(body)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, got)
	}
	return got, nil
}

func benchQueue(b *testing.B, d *deployer) {
	client := benchClient()
	fnID := d.deployedApp(b, "e2e-deploy-bench").function(b, "bench_q", 1)
	completed := func() int {
		var out struct{ Tasks struct{ TotalCount int } }
		gql(b, d.s.URL, d.token, `query($f: ID!) { tasks(where: {functionID: $f, state: COMPLETE}) { totalCount } }`,
			map[string]any{"f": fnID}, &out)
		return out.Tasks.TotalCount
	}
	drain := func(want int) {
		deadline := time.Now().Add(fnTimeout)
		for completed() < want {
			if time.Now().After(deadline) {
				b.Fatalf("bench_q: %d of %d tasks COMPLETE after %v", completed(), want, fnTimeout)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	const warm = 100
	puts(b, client, d.s.URL+"/queue/bench_q", d.token, warm)
	drain(warm)

	start := time.Now()
	putTime := puts(b, client, d.s.URL+"/queue/bench_q", d.token, benchItems)
	drain(warm + benchItems)
	total := time.Since(start)
	// The queue drains while the puts arrive: what is left after the
	// last put says whether the workers kept up.
	b.ReportMetric(ms(total-putTime), "drain-after-puts-ms")

	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(benchItems)/putTime.Seconds(), "puts/s")
	b.ReportMetric(float64(benchItems)/total.Seconds(), "tasks/s")
}

// puts POSTs n items to a queue URL from benchClients goroutines (each
// must answer 202) and returns how long that took.
func puts(b *testing.B, client *http.Client, url, token string, n int) time.Duration {
	b.Helper()
	var next atomic.Int64
	var mu sync.Mutex
	var failure error
	var wg sync.WaitGroup
	start := time.Now()
	for range benchClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if _, err := postStatus(client, url, token, fmt.Sprintf(`{"i":%d}`, i), http.StatusAccepted); err != nil {
					mu.Lock()
					failure = err
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if failure != nil {
		b.Fatalf("%s: %v", url, failure)
	}
	return time.Since(start)
}
