package graph_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/jobevent"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/workers"
)

// The benchmarks go through the real GraphQL handler over HTTP, like a
// client of `levers9 server` would. Each measurement does a fixed amount of
// work per iteration, so `-benchtime 1x` prints stable numbers; the custom
// metrics replace ns/op, which would only time the whole batch.

const (
	// submitsPerRun is how many submitJob mutations one iteration sends.
	submitsPerRun = 2000
	// submitWarmup requests run before timing, to open connections.
	submitWarmup = 50
	// submitRounds is how many rounds of submissions and raw inserts
	// alternate in one iteration (submitsPerRun of each in all).
	submitRounds = 8

	// seededJobs is how many jobs BenchmarkJobsQuery stores first.
	seededJobs = 100_000
	seedBatch  = 1000
	// queriesPerRun is how many jobs(first: 100) queries one iteration times.
	queriesPerRun = 500
	queryWarmup   = 10
)

const submitMutation = `mutation($spec: JobSpecInput!) { submitJob(spec: $spec) { id status } }`

const jobsQuery = `{ jobs(first: 100) { edges { node { id name status queue { name } } } pageInfo { endCursor } } }`

// benchSpec is a small, valid job for the default queue.
func benchSpec(name string) jobspec.Job {
	return jobspec.Job{
		Name: name, Queue: tenancy.DefaultQueue,
		Services: []jobspec.Service{{
			Name: "main", Image: "busybox:1.36", Command: []string{"sh", "-c"}, Args: []string{"echo hello"},
			CPU: 1, MemoryMiB: 512,
		}},
	}
}

// BenchmarkSubmitJob measures submitJob mutations per second with 1 and 8
// concurrent clients, each on a fresh database of each dialect.
func BenchmarkSubmitJob(b *testing.B) {
	for _, dialect := range dbtest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			for _, clients := range []int{1, 8} {
				b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
					benchSubmit(b, dbtest.URL(b, dialect), clients)
				})
			}
		})
	}
}

func benchSubmit(b *testing.B, url string, clients int) {
	e := newEnv(b, url)
	a := e.newTenant("bench")
	c := newBenchClient(e.srv.URL, a.adminToken, clients)
	raw := newRawSubmitter(b, e, a)

	var seq int
	body := func() []byte {
		seq++
		return gqlBody(submitMutation, vars{"spec": benchSpec(fmt.Sprintf("bench-%d", seq))})
	}
	for range submitWarmup {
		if _, err := c.do(body(), checkSubmitted); err != nil {
			b.Fatalf("warm-up submit: %v", err)
		}
	}
	if _, err := raw.run(submitWarmup, clients); err != nil {
		b.Fatalf("warm-up raw insert: %v", err)
	}

	// The submissions and the raw inserts alternate in rounds, so that
	// both meet the same load of the (shared, noisy) machine: a burst of
	// other work slows both, not only whichever ran at that moment.
	var all []time.Duration
	var elapsed, rawElapsed time.Duration
	perRound := submitsPerRun / submitRounds
	b.ResetTimer()
	b.StopTimer()
	for range b.N {
		for range submitRounds {
			// Bodies are built up front so that only the requests are timed.
			bodies := make([][]byte, perRound)
			for i := range bodies {
				bodies[i] = body()
			}
			b.StartTimer()
			lat, took, err := c.run(bodies, clients, checkSubmitted)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			all = append(all, lat...)
			elapsed += took
			took, err = raw.run(perRound, clients)
			if err != nil {
				b.Fatalf("raw inserts: %v", err)
			}
			rawElapsed += took
		}
	}

	// Every submission must have been stored.
	ctx := viewer.SystemContext(context.Background())
	if n, err := e.db.Ent.Job.Query().Where(job.NameHasPrefix("bench-")).Count(ctx); err != nil {
		b.Fatal(err)
	} else if want := submitWarmup + b.N*submitRounds*perRound; n != want {
		b.Fatalf("stored %d jobs, want %d", n, want)
	}

	rate := float64(len(all)) / elapsed.Seconds()
	rawRate := float64(b.N*submitRounds*perRound) / rawElapsed.Seconds()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(rate, "jobs/s")
	b.ReportMetric(rawRate, "raw-jobs/s")
	b.ReportMetric(rate/rawRate, "of-raw")
	reportLatency(b, all)
}

// rawSubmitter is the same-run baseline of benchSubmit: the rows one
// submission writes (the job, its services, its "submitted" event and the
// River job scheduling its queue) inserted straight through ent, one
// transaction per job, from several goroutines, with nothing checked.
type rawSubmitter struct {
	e    *env
	a    *tenant
	q    *ent.Queue
	rc   *workers.Clients
	next atomic.Int64 // numbers the jobs "raw-N"
}

func newRawSubmitter(b *testing.B, e *env, a *tenant) *rawSubmitter {
	b.Helper()
	ctx := viewer.SystemContext(context.Background())
	q, err := e.db.Ent.Queue.Query().Where(queue.Name(tenancy.DefaultQueue)).Only(ctx)
	if err != nil {
		b.Fatal(err)
	}
	rc, err := workers.NewClients(e.db, workers.Deps{Ent: e.db.Ent, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	return &rawSubmitter{e: e, a: a, q: q, rc: rc}
}

// one inserts the rows of job i in one transaction.
func (r *rawSubmitter) one(i int) error {
	ctx := viewer.SystemContext(context.Background())
	a := r.a
	return r.e.db.InTx(ctx, func(tx *database.Tx) error {
		spec := benchSpec(fmt.Sprintf("raw-%d", i))
		j, err := tx.Ent.Job.Create().
			SetTenantID(a.ent.ID).SetEnvironmentID(a.mainEnv).
			SetName(spec.Name).SetSpec(spec).SetQueueID(r.q.ID).SetOwnerID(a.admin.ID).
			SetInteractive(spec.Interactive).SetKind(job.Kind(spec.Kind())).
			SetPriority(spec.Priority).SetTimeoutSeconds(spec.TimeoutSeconds).
			SetRetries(spec.Retries).SetGpus(spec.TotalGPUs()).
			SetStatusReason("waiting to be scheduled").
			Save(ctx)
		if err != nil {
			return fmt.Errorf("storing job: %w", err)
		}
		services := make([]*ent.ServiceCreate, len(spec.Services))
		for k, svc := range spec.Services {
			services[k] = tx.Ent.Service.Create().
				SetTenantID(a.ent.ID).SetEnvironmentID(a.mainEnv).
				SetJobID(j.ID).SetName(svc.Name).SetImage(svc.Image).
				SetCommand(svc.Command).SetArgs(svc.Args).SetEnv(svc.Env).
				SetCPU(svc.CPU).SetMemoryMib(svc.MemoryMiB).SetGpus(svc.GPUs).
				SetGpuTypes(svc.GPUTypes).SetPorts(svc.Ports)
		}
		if _, err := tx.Ent.Service.CreateBulk(services...).Save(ctx); err != nil {
			return fmt.Errorf("storing services: %w", err)
		}
		if err := tx.Ent.JobEvent.Create().
			SetTenantID(a.ent.ID).SetEnvironmentID(a.mainEnv).
			SetJobID(j.ID).SetStatus(jobevent.StatusPending).SetReason("submitted").SetAt(j.CreatedAt).
			Exec(ctx); err != nil {
			return fmt.Errorf("storing event: %w", err)
		}
		return workers.InsertScheduleQueue(ctx, r.rc, tx.SQL, r.q.ID)
	})
}

// run inserts n jobs from clients goroutines and returns the wall time.
func (r *rawSubmitter) run(n, clients int) (time.Duration, error) {
	var (
		left  atomic.Int64
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	left.Store(int64(n))
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if err := r.one(int(r.next.Add(1))); err != nil {
					errMu.Lock()
					first = cmp.Or(first, err)
					errMu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start), first
}

// BenchmarkJobsQuery measures the latency of the first page of jobs with
// seededJobs jobs stored, on each dialect.
func BenchmarkJobsQuery(b *testing.B) {
	for _, dialect := range dbtest.Dialects() {
		b.Run(fmt.Sprintf("%s/jobs=%d", dialect, seededJobs), func(b *testing.B) {
			e := newEnv(b, dbtest.URL(b, dialect))
			a := e.newTenant("bench")
			start := time.Now()
			seedJobs(b, e.db, a, seededJobs)
			b.Logf("seeded %d jobs with their services in %v", seededJobs, time.Since(start).Round(time.Millisecond))
			if dialect == "postgres" {
				// Autovacuum would analyze the new rows some time later; do it
				// now so the numbers show the steady state rather than which
				// plan happened to be current. (Without statistics PostgreSQL
				// sorts every job of the environment for the first page.)
				if _, err := e.db.SQL.Exec("ANALYZE"); err != nil {
					b.Fatal(err)
				}
			}

			c := newBenchClient(e.srv.URL, a.adminToken, 1)
			body := gqlBody(jobsQuery, nil)
			for range queryWarmup {
				if _, err := c.do(body, checkJobsPage); err != nil {
					b.Fatalf("warm-up query: %v", err)
				}
			}
			bodies := make([][]byte, queriesPerRun)
			for i := range bodies {
				bodies[i] = body
			}

			var all []time.Duration
			b.ResetTimer()
			for range b.N {
				lat, _, err := c.run(bodies, 1, checkJobsPage)
				if err != nil {
					b.Fatal(err)
				}
				all = append(all, lat...)
			}
			b.StopTimer()
			b.ReportMetric(0, "ns/op")
			reportLatency(b, all)
		})
	}
}

// seedJobs stores n pending jobs of one service each, owned by a's admin in
// its main environment, straight through ent in batches.
func seedJobs(b *testing.B, db *database.DB, a *tenant, n int) {
	b.Helper()
	ctx := viewer.SystemContext(context.Background())
	q, err := db.Ent.Queue.Query().Where(queue.Name(tenancy.DefaultQueue)).Only(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for done := 0; done < n; done += seedBatch {
		size := min(seedBatch, n-done)
		err := db.InTx(ctx, func(tx *database.Tx) error {
			jobs := make([]*ent.JobCreate, size)
			for i := range jobs {
				spec := benchSpec(fmt.Sprintf("seeded-%d", done+i))
				jobs[i] = tx.Ent.Job.Create().
					SetTenantID(a.ent.ID).SetEnvironmentID(a.mainEnv).
					SetName(spec.Name).SetSpec(spec).
					SetQueueID(q.ID).SetOwnerID(a.admin.ID).
					SetStatusReason("waiting to be scheduled")
			}
			created, err := tx.Ent.Job.CreateBulk(jobs...).Save(ctx)
			if err != nil {
				return fmt.Errorf("storing jobs: %w", err)
			}
			services := make([]*ent.ServiceCreate, size)
			for i, j := range created {
				svc := j.Spec.Services[0]
				services[i] = tx.Ent.Service.Create().
					SetTenantID(a.ent.ID).SetEnvironmentID(a.mainEnv).
					SetJobID(j.ID).SetName(svc.Name).SetImage(svc.Image).
					SetCommand(svc.Command).SetArgs(svc.Args).
					SetCPU(svc.CPU).SetMemoryMib(svc.MemoryMiB)
			}
			if _, err := tx.Ent.Service.CreateBulk(services...).Save(ctx); err != nil {
				return fmt.Errorf("storing services: %w", err)
			}
			return nil
		})
		if err != nil {
			b.Fatalf("seeding jobs %d..%d: %v", done, done+size, err)
		}
	}
}

// reportLatency reports the median and 99th percentile of lat in ms.
func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	pct := func(p float64) float64 {
		i := min(len(lat)-1, int(p*float64(len(lat))))
		return float64(lat[i]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// benchClient sends GraphQL requests from many goroutines; unlike env.gql it
// reports errors instead of failing the benchmark, which only its own
// goroutine may do.
type benchClient struct {
	url, token string
	http       *http.Client
}

func newBenchClient(url, token string, clients int) *benchClient {
	// Keep a warm connection per client, as long-lived clients would.
	tr := &http.Transport{MaxIdleConns: clients * 2, MaxIdleConnsPerHost: clients * 2}
	return &benchClient{url: url, token: token, http: &http.Client{Transport: tr, Timeout: time.Minute}}
}

func gqlBody(query string, v vars) []byte {
	body, err := json.Marshal(map[string]any{"query": query, "variables": v})
	if err != nil {
		panic(err)
	}
	return body
}

// do sends one request and checks its answer with check, returning how long
// the round trip took.
func (c *benchClient) do(body []byte, check func(json.RawMessage) error) (time.Duration, error) {
	req, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if err != nil {
		return 0, err
	}
	var r response
	if err := json.Unmarshal(raw, &r); err != nil {
		return 0, fmt.Errorf("status %d, body %q: %w", resp.StatusCode, raw, err)
	}
	if len(r.Errors) > 0 || resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d, errors %+v", resp.StatusCode, r.Errors)
	}
	return took, check(r.Data)
}

// run sends bodies from clients goroutines, each taking the next unsent
// body, and returns every request's latency and the wall time of the run.
func (c *benchClient) run(bodies [][]byte, clients int, check func(json.RawMessage) error) ([]time.Duration, time.Duration, error) {
	var (
		mu       sync.Mutex
		next     int
		firstErr error
		wg       sync.WaitGroup
	)
	lats := make([][]time.Duration, clients)
	take := func() ([]byte, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next == len(bodies) || firstErr != nil {
			return nil, false
		}
		next++
		return bodies[next-1], true
	}
	start := time.Now()
	for w := range clients {
		wg.Go(func() {
			for {
				body, ok := take()
				if !ok {
					return
				}
				took, err := c.do(body, check)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				lats[w] = append(lats[w], took)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return nil, 0, firstErr
	}
	return slices.Concat(lats...), elapsed, nil
}

func checkSubmitted(data json.RawMessage) error {
	var out struct{ SubmitJob struct{ ID, Status string } }
	if err := json.Unmarshal(data, &out); err != nil {
		return err
	}
	if out.SubmitJob.ID == "" || out.SubmitJob.Status != "PENDING" {
		return fmt.Errorf("submitJob returned %s", data)
	}
	return nil
}

func checkJobsPage(data json.RawMessage) error {
	var out struct {
		Jobs struct {
			Edges []struct {
				Node struct {
					ID    string
					Queue struct{ Name string }
				}
			}
			PageInfo struct{ EndCursor *string }
		}
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return err
	}
	if len(out.Jobs.Edges) != 100 || out.Jobs.PageInfo.EndCursor == nil ||
		out.Jobs.Edges[0].Node.Queue.Name != tenancy.DefaultQueue {
		return fmt.Errorf("jobs(first: 100) returned %d edges: %.300s", len(out.Jobs.Edges), data)
	}
	return nil
}
