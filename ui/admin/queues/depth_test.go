package queues_test

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/admin/admintest"
	"github.com/levers9/levers9/ui/admin/queues"
)

// TestDepthChart: the queue list draws the jobs waiting per queue and
// hour: a job pending since an hour before this one counts that hour and
// this one so far; another tenant's waiting job counts nothing.
func TestDepthChart(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := admintest.New(t, dbURL, queues.Register)
		a, b := e.NewTenant("acme"), e.NewTenant("other")
		sys := viewer.SystemContext(context.Background())
		hour := time.Now().UTC().Truncate(time.Hour)
		for _, tn := range []*admintest.Tenant{a, b} {
			env, err := tenancy.MainEnvironmentID(sys, e.Ent, tn.Ent.ID)
			if err != nil {
				t.Fatal(err)
			}
			q := e.Ent.Queue.Query().Where(queue.TenantID(tn.Ent.ID), queue.Name(tenancy.DefaultQueue)).OnlyX(sys)
			e.Ent.Job.Create().SetTenantID(tn.Ent.ID).SetEnvironmentID(env).SetName("waits").SetQueueID(q.ID).
				SetOwnerID(tn.Member.ID).SetStatus(job.StatusPending).SetCreatedAt(hour.Add(-time.Hour)).
				SetSpec(jobspec.Job{Queue: q.Name, Services: []jobspec.Service{{Name: "main", Command: []string{"true"}}}}).SaveX(sys)
		}
		res := e.SignIn(a.Admin.Email).Get("/admin/queues").Want(t, http.StatusOK)
		m := regexp.MustCompile(`<figure class="chart" id="queue-depth" data-total="([^"]*)"`).FindStringSubmatch(res.Body)
		if m == nil {
			t.Fatalf("no queue depth chart:\n%s", res.Body)
		}
		want := 1 + time.Since(hour).Hours()
		if v, err := strconv.ParseFloat(m[1], 64); err != nil || v < want-0.02 || v > want+0.02 {
			t.Errorf("job-hours waiting %s, want %.2f", m[1], want)
		}
		res.Contains(t, `<span class="series">default</span>`)
	})
}
