package queues_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/queues"
	"github.com/levers9/levers9/internal/timewindow"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// TestDepths: a job waits from submission to its start, or to its end
// without a start, or to now; per queue, deepest first; the viewer sees
// their tenant's jobs only.
func TestDepths(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		tn := fixture.New(t, url, fixture.TenantOptions{Slug: "alpha"})
		other := fixture.NewTenant(t, tn.DB, fixture.TenantOptions{Slug: "beta"})
		gpu := tn.AddQueue(t, "gpu")
		js := fixture.Jobs(tn.DB, time.Now)
		t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
		at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }
		add := func(tn *fixture.Tenant, queueID string, created time.Duration, status job.Status, started, finished *time.Time) {
			t.Helper()
			j := tn.Submit(t, js, nil, fixture.Service(1, 64))
			// The queue is immutable: a row of the other queue is written as
			// the submission would have, through SQL.
			if queueID != tn.DefaultQueue {
				if _, err := tn.DB.SQL.ExecContext(t.Context(), "UPDATE jobs SET queue_id = $1 WHERE id = $2", queueID, j.ID); err != nil {
					t.Fatal(err)
				}
			}
			u := tn.DB.Ent.Job.UpdateOneID(j.ID).SetStatus(status)
			if started != nil {
				u.SetStartedAt(*started)
			}
			if finished != nil {
				u.SetFinishedAt(*finished)
			}
			if err := u.Exec(fixture.Sys()); err != nil {
				t.Fatal(err)
			}
			if _, err := tn.DB.SQL.ExecContext(t.Context(), "UPDATE jobs SET created_at = $1 WHERE id = $2", t0.Add(created), j.ID); err != nil {
				t.Fatal(err)
			}
		}
		// default: waited 10:00–10:30, then ran.
		add(tn, tn.DefaultQueue, 0, job.StatusRunning, at(30*time.Minute), nil)
		// default: cancelled while pending at 11:00 after waiting an hour.
		add(tn, tn.DefaultQueue, 0, job.StatusCancelled, nil, at(time.Hour))
		// gpu: two jobs waiting since 10:30, still pending (now is 12:00).
		add(tn, gpu.ID, 30*time.Minute, job.StatusPending, nil, nil)
		add(tn, gpu.ID, 30*time.Minute, job.StatusPending, nil, nil)
		// Started before the window: not in it.
		add(tn, tn.DefaultQueue, -3*time.Hour, job.StatusComplete, at(-2*time.Hour), at(-time.Hour))
		// Another tenant's.
		add(other, other.DefaultQueue, 0, job.StatusPending, nil, nil)

		w := timewindow.Window{From: t0, Step: time.Hour, Steps: 2, Now: t0.Add(2 * time.Hour)}
		got, err := (&queues.Service{Ent: tn.DB.Ent}).Depths(tn.AsAdmin(), w)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprint([]queues.Depth{
			{QueueID: gpu.ID, Waiting: []float64{1, 2}},
			{QueueID: tn.DefaultQueue, Waiting: []float64{1.5, 0}},
		})
		if fmt.Sprint(got) != want {
			t.Errorf("depths\n%v\nwant\n%v", got, want)
		}
	})
}
