package jobs_test

import (
	"errors"
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/tenancy"
)

// TestSubmitQueueDefaults: a service that names no CPU or no memory gets
// the queue's defaults before limits, the estimate and insertion, so no
// job holds or pays for nothing.
func TestSubmitQueueDefaults(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		setQueue := func(edit func(*ent.QueueUpdate)) {
			t.Helper()
			u := w.db.Ent.Queue.Update().Where(queue.Name(tenancy.DefaultQueue))
			edit(u)
			if err := u.Exec(w.admin); err != nil {
				t.Fatal(err)
			}
		}
		setQueue(func(u *ent.QueueUpdate) {
			u.SetDefaultCPU(2).SetDefaultMemoryMib(2048).SetMaxCPUPerJob(5).SetCPUPrice(billing.Unit)
		})
		spec := jobspec.Job{Queue: tenancy.DefaultQueue, Services: []jobspec.Service{
			{Name: "bare", Command: []string{"true"}},
			{Name: "cpu-only", Command: []string{"true"}, CPU: 0.5},
			{Name: "memory-only", Command: []string{"true"}, MemoryMiB: 64},
		}}
		s := w.service(w.schedule)

		est, err := s.Estimate(w.admin, spec, 1)
		if err != nil {
			t.Fatal(err)
		}
		if want := billing.Tokens(4.5 * float64(billing.Unit)); est.PerMinute != want {
			t.Fatalf("estimate per minute = %s, want %s (2 + 0.5 + 2 CPUs at 1 token)", est.PerMinute, want)
		}

		setQueue(func(u *ent.QueueUpdate) { u.SetCPUPrice(0) }) // the admin holds no tokens
		j, err := s.Submit(w.admin, spec)
		if err != nil {
			t.Fatal(err)
		}
		if spec.Services[0].CPU != 0 {
			t.Fatal("Submit changed the caller's spec")
		}
		svcs, err := w.db.Ent.Service.Query().Where(service.JobID(j.ID)).Order(ent.Asc(service.FieldName)).All(w.admin)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string][2]float64{"bare": {2, 2048}, "cpu-only": {0.5, 2048}, "memory-only": {2, 64}}
		for _, svc := range svcs {
			if got := [2]float64{svc.CPU, float64(svc.MemoryMib)}; got != want[svc.Name] {
				t.Errorf("service %s holds %v CPU and MiB, want %v", svc.Name, got, want[svc.Name])
			}
		}
		stored, err := w.db.Ent.Job.Get(w.admin, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if stored.Spec.Services[0].CPU != 2 || stored.Spec.Services[0].MemoryMiB != 2048 {
			t.Errorf("stored spec = %+v, want the defaults in it", stored.Spec.Services[0])
		}
		// The scheduler's early stop reads these: the least of each, defaults
		// included.
		if stored.SmallestCPU != 0.5 || stored.SmallestMemoryMib != 64 {
			t.Errorf("smallest request stored = %v CPU, %d MiB; want 0.5, 64", stored.SmallestCPU, stored.SmallestMemoryMib)
		}

		// Three bare services ask for 3 × 2 CPUs, over the queue's 5.
		spec.Services[1], spec.Services[2] = jobspec.Service{Name: "b", Command: []string{"x"}}, jobspec.Service{Name: "c", Command: []string{"x"}}
		_, err = s.Submit(w.admin, spec)
		var fe *fault.Error
		if !errors.As(err, &fe) || fe.Code != fault.BadUserInput || fe.Field != "services" {
			t.Fatalf("three bare services over the limit: err = %v, want BAD_USER_INPUT on services", err)
		}
	})
}
