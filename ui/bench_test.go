package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/session"
)

// benchJobs is how many jobs the tenant holds in BenchmarkJobsPage.
const benchJobs = 10_000

// BenchmarkJobsPage measures the server time of the jobs page (handler,
// session, viewer, queries, rendering; no network) with 10,000 jobs in the
// tenant, as p50 and p99 over many requests: the first page, a later page,
// and a status filter.
func BenchmarkJobsPage(b *testing.B) {
	for _, d := range dbtest.Dialects() {
		b.Run(d, func(b *testing.B) {
			e := newEnv(b, dbtest.URL(b, d))
			seedJobs(b, e, benchJobs)
			if d == "postgres" {
				// What autovacuum does soon after a bulk load in production.
				if _, err := e.db.SQL.ExecContext(context.Background(), "ANALYZE"); err != nil {
					b.Fatal(err)
				}
			}
			br := e.browser()
			br.signIn(adminEmail)
			cookie := br.cookie()
			h := e.srv.Config.Handler

			get := func(path string) (time.Duration, string) {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				req.AddCookie(&http.Cookie{Name: session.CookieName, Value: cookie})
				rec := httptest.NewRecorder()
				start := time.Now()
				h.ServeHTTP(rec, req)
				took := time.Since(start)
				if rec.Code != http.StatusOK {
					b.Fatalf("GET %s: %d", path, rec.Code)
				}
				return took, rec.Body.String()
			}
			_, first := get("/jobs")
			m := regexp.MustCompile(`href="(/jobs\?after=[^"]+)" rel="next"`).FindStringSubmatch(first)
			if m == nil || !strings.Contains(first, fmt.Sprintf("%d jobs", benchJobs)) {
				b.Fatal("the first page has no next page or a wrong total")
			}
			next := strings.ReplaceAll(m[1], "&amp;", "&")
			pages := []struct{ name, path string }{
				{"first", "/jobs"}, {"next", next}, {"filtered", "/jobs?status=RUNNING"},
			}
			const samples = 200
			b.ResetTimer()
			for range b.N {
				for _, p := range pages {
					times := make([]time.Duration, 0, samples)
					for range samples {
						took, _ := get(p.path)
						times = append(times, took)
					}
					slices.Sort(times)
					ms := func(q float64) float64 { return float64(times[int(q*float64(len(times)-1))]) / 1e6 }
					b.ReportMetric(ms(0.50), p.name+"-p50-ms")
					b.ReportMetric(ms(0.99), p.name+"-p99-ms")
				}
			}
		})
	}
}

// seedJobs stores n jobs of the admin in bulk (Submit, one transaction
// each, would dominate the run): a mix of statuses, one service each, and
// a compute charge on every started one.
func seedJobs(b *testing.B, e *env, n int) {
	b.Helper()
	ctx := viewer.SystemContext(context.Background())
	c := e.db.Ent
	q, err := c.Queue.Query().Where(queue.TenantID(e.tenant.ID), queue.Name("default")).Only(ctx)
	if err != nil {
		b.Fatal(err)
	}
	statuses := []job.Status{job.StatusComplete, job.StatusComplete, job.StatusError, job.StatusRunning, job.StatusCancelled, job.StatusPending}
	base := time.Now().Add(-time.Duration(n) * time.Minute)
	const batch = 500
	for from := 0; from < n; from += batch {
		var jobs []*ent.JobCreate
		for i := from; i < min(from+batch, n); i++ {
			at := base.Add(time.Duration(i) * time.Minute)
			st := statuses[i%len(statuses)]
			spec := jobspec.Job{Name: fmt.Sprintf("job-%05d", i), Queue: "default",
				Services: []jobspec.Service{{Name: "main", Command: []string{"true"}, CPU: 1, MemoryMiB: 512}}}
			jc := c.Job.Create().SetTenantID(e.tenant.ID).SetEnvironmentID(e.admin.EnvironmentID).
				SetName(spec.Name).SetSpec(spec).SetQueueID(q.ID).SetOwnerID(e.admin.UserID).
				SetStatus(st).SetCreatedAt(at)
			if st != job.StatusPending {
				jc.SetStartedAt(at.Add(time.Second))
			}
			jobs = append(jobs, jc)
		}
		created, err := c.Job.CreateBulk(jobs...).Save(ctx)
		if err != nil {
			b.Fatal(err)
		}
		var svcs []*ent.ServiceCreate
		var charges []*ent.ChargeCreate
		for _, j := range created {
			svcs = append(svcs, c.Service.Create().SetTenantID(e.tenant.ID).SetEnvironmentID(e.admin.EnvironmentID).SetJobID(j.ID).SetName("main").SetCommand([]string{"true"}).
				SetCPU(1).SetMemoryMib(512).SetStatus(service.Status(j.Status)))
			if j.StartedAt != nil {
				charges = append(charges, c.Charge.Create().SetTenantID(e.tenant.ID).SetPayerKind(charge.PayerKindUser).
					SetUserID(e.admin.UserID).SetJobID(j.ID).SetKind(charge.KindCompute).SetTokens(3*billing.Unit/2).
					SetIdempotencyKey("bench:"+j.ID))
			}
		}
		if err := c.Service.CreateBulk(svcs...).Exec(ctx); err != nil {
			b.Fatal(err)
		}
		if err := c.Charge.CreateBulk(charges...).Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
