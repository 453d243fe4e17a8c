package nodes_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/tenancy"
)

// TestHeldOn: a node is held by the services placed on it that are pending
// or running, whoever asks (the read is the system's), with their CPU,
// memory, GPUs (devices when named, the type marked unnamed when not) and
// host ports (fixed and agent-picked). Ended and unplaced services hold
// nothing; a node holding nothing is absent.
func TestHeldOn(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := context.Background()
		a, b, idle := w.join(t, "a"), w.join(t, "b"), w.join(t, "idle")
		err := w.db.Ent.Queue.Update().Where(queue.Name(tenancy.DefaultQueue)).
			SetGpuPrices([]billing.GPURate{{Type: "H100"}}).Exec(w.sys)
		if err != nil {
			t.Fatal(err)
		}
		// place submits a one-service job and puts its service on nodeID
		// ("": unplaced) in status, as the scheduler and the agent would.
		place := func(nodeID string, status service.Status, svc jobspec.Service, set func(*ent.ServiceUpdate)) {
			t.Helper()
			svc.Name, svc.Command = "main", []string{"true"}
			j, err := w.jobs.Submit(w.admin, jobspec.Job{Name: "h", Queue: tenancy.DefaultQueue, Services: []jobspec.Service{svc}})
			if err != nil {
				t.Fatal(err)
			}
			u := w.db.Ent.Service.Update().Where(service.JobID(j.ID)).SetStatus(status)
			if nodeID != "" {
				u.SetNodeID(nodeID)
			}
			if set != nil {
				set(u)
			}
			if err := u.Exec(w.sys); err != nil {
				t.Fatal(err)
			}
		}
		place(a, service.StatusPending, jobspec.Service{CPU: 1, MemoryMiB: 128,
			Ports: []jobspec.Port{{Name: "http", Port: 8080}, {Name: "admin"}}},
			func(u *ent.ServiceUpdate) { u.SetHostPorts([]jobspec.Port{{Name: "admin", Port: 31000}}) })
		place(a, service.StatusRunning, jobspec.Service{CPU: 2, MemoryMiB: 256, GPUs: 2, GPUTypes: []string{"H100"}},
			func(u *ent.ServiceUpdate) { u.SetGpuType("H100").SetGpuDevices([]string{"GPU-b", "GPU-a"}) })
		place(a, service.StatusRunning, jobspec.Service{CPU: 1, MemoryMiB: 64, GPUs: 1, GPUTypes: []string{"H100"}},
			func(u *ent.ServiceUpdate) { u.SetGpuType("H100") }) // placed before devices were booked
		place(a, service.StatusComplete, jobspec.Service{CPU: 8, MemoryMiB: 8192}, nil)
		place(b, service.StatusRunning, jobspec.Service{CPU: 4, MemoryMiB: 512}, nil)
		place("", service.StatusPending, jobspec.Service{CPU: 16, MemoryMiB: 8192}, nil)

		// No viewer at all: the read is the system's.
		held, err := nodes.HeldOn(ctx, w.db.Ent, []string{a, b, idle})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range held {
			slices.Sort(h.Ports)
			for _, ds := range h.Devices {
				slices.Sort(ds)
			}
		}
		want := map[string]*nodes.Held{
			a: {CPU: 4, MemoryMiB: 448, GPUs: map[string]int{"H100": 3},
				Devices: map[string][]string{"H100": {"GPU-a", "GPU-b"}}, Unnamed: map[string]bool{"H100": true},
				Ports: []int{8080, 31000}},
			b: {CPU: 4, MemoryMiB: 512},
		}
		if !reflect.DeepEqual(held, want) {
			t.Fatalf("held =\n%s\nwant\n%s", show(held), show(want))
		}
	})
}

func show(m map[string]*nodes.Held) string {
	out := ""
	for id, h := range m {
		out += fmt.Sprintf("%s: %+v\n", id, *h)
	}
	return out
}
