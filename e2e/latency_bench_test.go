package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
)

// BenchmarkTrivialJob measures, on the built-in local node of the real
// server binary, how long a trivial job (`true`) takes from submission to
// running and to finished, by the server's own timestamps (job created,
// RUNNING event, COMPLETE event), one job at a time; the end-to-end rate of
// 500 jobs submitted by 8 clients each following its job to the end; and
// of a burst of 500 submitted at once and left to run.
func BenchmarkTrivialJob(b *testing.B) {
	for _, dialect := range dbtest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			s := startServer(b, b.TempDir(), dbtest.URL(b, dialect))
			token := s.credentials().Token
			waitLocalNode(b, s.URL, token)
			for range 10 { // warm up
				runTrivial(b, s.URL, token)
			}
			var running, done []time.Duration
			for range 200 {
				r, d := runTrivial(b, s.URL, token)
				running, done = append(running, r), append(done, d)
			}
			const jobs, clients = 500, 8
			start := time.Now()
			var wg sync.WaitGroup
			for c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := c; i < jobs; i += clients {
						runTrivial(b, s.URL, token)
					}
				}()
			}
			wg.Wait()
			rate := jobs / time.Since(start).Seconds()
			burst := runBurst(b, s.URL, token, trivialJob, jobs, clients)
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(ms(percentile(running, 50)), "p50-running-ms")
			b.ReportMetric(ms(percentile(running, 99)), "p99-running-ms")
			b.ReportMetric(ms(percentile(done, 50)), "p50-finished-ms")
			b.ReportMetric(ms(percentile(done, 99)), "p99-finished-ms")
			b.ReportMetric(rate, "jobs/s(8-clients)")
			b.ReportMetric(burst, "jobs/s(burst)")
			s.stop()
		})
	}
}

// runBurst submits jobs trivial jobs from clients clients at once, without
// following them, waits until all have ended and returns jobs per second
// from the first submission to the last end. The wait polls the job count
// (the benchmark's own clock, not on the server's path).
func runBurst(b testing.TB, base, token, submit string, jobs, clients int) float64 {
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := c; i < jobs; i += clients {
				gql(b, base, token, submit+` { id } }`, nil, &map[string]any{})
			}
		})
	}
	wg.Wait()
	for {
		var out struct{ Jobs struct{ TotalCount int } }
		gql(b, base, token, `{ jobs(where: {statusIn: [PENDING, RUNNING]}) { totalCount } }`, nil, &out)
		if out.Jobs.TotalCount == 0 {
			return float64(jobs) / time.Since(start).Seconds()
		}
		time.Sleep(50 * time.Millisecond) // rarely: the count competes with the work
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func percentile(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func waitLocalNode(b testing.TB, base, token string) {
	b.Helper()
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		var out struct {
			Nodes struct {
				Edges []struct{ Node struct{ Status string } }
			}
		}
		gql(b, base, token, `{ nodes { edges { node { status } } } }`, nil, &out)
		for _, e := range out.Nodes.Edges {
			if e.Node.Status == "ONLINE" {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatal("the local node did not come online")
}

// runTrivial submits `true` and follows the job's events over SSE until it
// ends; it returns submit-to-running and submit-to-finished by the server's
// clock.
func runTrivial(b testing.TB, base, token string) (toRunning, toDone time.Duration) {
	return runJob(b, base, token, trivialJob)
}

// runJob submits with the mutation submit (without its selection) and
// follows the job like runTrivial.
func runJob(b testing.TB, base, token, submit string) (toRunning, toDone time.Duration) {
	var sub struct {
		SubmitJob struct {
			ID        string
			CreatedAt time.Time
		}
	}
	gql(b, base, token, submit+` { id createdAt } }`, nil, &sub)
	done := false
	subscribe(b, base, token, `subscription($id: ID!) { jobEvents(jobId: $id) { status at } }`, map[string]any{"id": sub.SubmitJob.ID}, func(data []byte) bool {
		var ev struct {
			Data struct {
				JobEvents struct {
					Status string
					At     time.Time
				}
			}
		}
		if json.Unmarshal(data, &ev) != nil {
			return true
		}
		e := ev.Data.JobEvents
		switch e.Status {
		case "RUNNING":
			toRunning = e.At.Sub(sub.SubmitJob.CreatedAt)
		case "COMPLETE":
			toDone, done = e.At.Sub(sub.SubmitJob.CreatedAt), true
			return false
		case "ERROR", "CANCELLED":
			b.Fatalf("trivial job %s ended %s", sub.SubmitJob.ID, e.Status)
		}
		return true
	})
	if !done {
		b.Fatalf("event stream of job %s ended before the job", sub.SubmitJob.ID)
	}
	return toRunning, toDone
}

// trivialJob submits `true` on the default queue; callers add the selection.
const trivialJob = `mutation { submitJob(spec: {queue: "default", services: [{name: "main", command: ["true"], cpu: 0.1, memoryMiB: 16}]})`

// subscribe runs a GraphQL subscription over server-sent events and hands
// each event's data to each until it returns false or the stream ends.
func subscribe(t testing.TB, base, token, query string, vars map[string]any, each func(data []byte) bool) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, base+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data:"); ok && !each([]byte(data)) {
			return
		}
	}
}

// subscribeLogs follows a job's logs over SSE from seq from until the
// stream ends (the job has ended) and returns the seqs received.
func subscribeLogs(t testing.TB, base, token, jobID string, from int) []int {
	t.Helper()
	var seqs []int
	subscribe(t, base, token, `subscription($id: ID!, $from: Int) { jobLogs(jobId: $id, fromSeq: $from) { seq } }`,
		map[string]any{"id": jobID, "from": from}, func(data []byte) bool {
			var ev struct {
				Data struct{ JobLogs struct{ Seq int } }
			}
			if json.Unmarshal(data, &ev) == nil && ev.Data.JobLogs.Seq > 0 {
				seqs = append(seqs, ev.Data.JobLogs.Seq)
			}
			return true
		})
	return seqs
}

// BenchmarkMillionLines measures "a job printing 1,000,000 lines: stored
// lines/s" on the built-in node: from submission to the job's end, which
// the server records only after the job's last line is stored. Beside it,
// the baseline of `seq` writing the same lines to /dev/null here.
func BenchmarkMillionLines(b *testing.B) {
	const n = 1_000_000
	start := time.Now()
	if err := exec.Command("sh", "-c", "seq 1 1000000 >/dev/null").Run(); err != nil {
		b.Fatal(err)
	}
	baseline := n / time.Since(start).Seconds()
	for _, dialect := range dbtest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			var env []string
			if addr := os.Getenv("BENCH_PPROF_ADDR"); addr != "" { // profile the server while it runs
				env = append(env, "LEVERS9_PPROF_ADDR="+addr)
			}
			s := startServer(b, b.TempDir(), dbtest.URL(b, dialect), env...)
			token := s.credentials().Token
			waitLocalNode(b, s.URL, token)
			var stored time.Duration
			for range b.N {
				var sub struct{ SubmitJob struct{ ID string } }
				start := time.Now()
				gql(b, s.URL, token, `mutation { submitJob(spec: {queue: "default", services: [{name: "main", command: ["seq", "1", "1000000"], cpu: 0.1, memoryMiB: 64}]}) { id } }`, nil, &sub)
				for {
					var out struct {
						Node struct{ Status, StatusReason string }
					}
					gql(b, s.URL, token, `query($id: ID!) { node(id: $id) { ... on Job { status statusReason } } }`, map[string]any{"id": sub.SubmitJob.ID}, &out)
					if out.Node.Status == "COMPLETE" {
						break
					}
					if out.Node.Status == "ERROR" || out.Node.Status == "CANCELLED" {
						b.Fatalf("the job ended %s: %s", out.Node.Status, out.Node.StatusReason)
					}
					time.Sleep(100 * time.Millisecond)
				}
				stored += time.Since(start)
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(n*b.N)/stored.Seconds(), "stored-lines/s")
			b.ReportMetric(baseline, "baseline-seq-to-devnull-lines/s")
			s.stop()
		})
	}
}
