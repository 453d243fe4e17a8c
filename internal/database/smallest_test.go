package database_test

import (
	"context"
	"testing"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/jobspec"
)

// Pending jobs stored before jobs kept their smallest request get it from
// their services when the server next migrates; other jobs, and jobs
// whose services ask for nothing, are left alone.
func TestMigrateFillsSmallestRequests(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		tn := fixture.New(t, url, fixture.TenantOptions{Slug: "fill"})
		ctx, sys := context.Background(), fixture.Sys()
		add := func(status job.Status, requests ...[2]float64) string {
			t.Helper()
			j, err := tn.DB.Ent.Job.Create().SetTenantID(tn.ID).SetEnvironmentID(tn.Env).SetSpec(jobspec.Job{}).
				SetQueueID(tn.DefaultQueue).SetOwnerID(tn.Admin.ID).SetStatus(status).Save(sys)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range requests {
				err := tn.DB.Ent.Service.Create().SetTenantID(tn.ID).SetEnvironmentID(tn.Env).SetJobID(j.ID).
					SetName(string(rune('a' + i))).SetCPU(r[0]).SetMemoryMib(int64(r[1])).Exec(sys)
				if err != nil {
					t.Fatal(err)
				}
			}
			return j.ID
		}
		pending := add(job.StatusPending, [2]float64{3, 512}, [2]float64{0.5, 4096})
		running := add(job.StatusRunning, [2]float64{2, 256})
		nothing := add(job.StatusPending, [2]float64{0, 0})
		for range 2 {
			if err := tn.DB.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for id, want := range map[string][2]float64{pending: {0.5, 512}, running: {0, 0}, nothing: {0, 0}} {
			j, err := tn.DB.Ent.Job.Get(sys, id)
			if err != nil {
				t.Fatal(err)
			}
			if got := [2]float64{j.SmallestCPU, float64(j.SmallestMemoryMib)}; got != want {
				t.Errorf("job %s (%s): smallest request %v, want %v", id, j.Status, got, want)
			}
		}
	})
}
