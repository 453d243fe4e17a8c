package nodes_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/inventory"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/timewindow"
)

// TestGPUHistory: GPUs are booked on a node from dispatch (else start) to
// the end, per type; whoever's job it is; services without GPUs, never
// placed, or on nodes the caller did not list count nothing.
func TestGPUHistory(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		tn := fixture.New(t, url, fixture.TenantOptions{Slug: "alpha"})
		other := fixture.NewTenant(t, tn.DB, fixture.TenantOptions{Slug: "beta"})
		member := tn.AddMember(t, "m")
		gpu := fixture.Node{Name: "g", Inventory: inventory.Inventory{CPUs: 8, MemoryMiB: 1024,
			GPUs: []inventory.GPU{{Type: "A100", Count: 4}, {Type: "T4", Count: 1}}}}
		g := tn.AddNode(t, gpu)
		gpu.Name = "theirs"
		theirs := other.AddNode(t, gpu)
		js := fixture.Jobs(tn.DB, time.Now)
		for _, x := range []*fixture.Tenant{tn, other} {
			x.Price(t, x.DefaultQueue, billing.Rates{GPU: []billing.GPURate{{Type: "A100"}, {Type: "T4"}}, Multiplier: 1})
		}
		t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
		place := func(tn *fixture.Tenant, nodeID string, gpus int, typ string, status service.Status, dispatched, started, finished *time.Time) {
			t.Helper()
			spec := fixture.Service(1, 64)
			spec.GPUs, spec.GPUTypes = gpus, []string{typ}
			j := tn.Submit(t, js, nil, spec)
			u := tn.DB.Ent.Service.Update().Where(service.JobID(j.ID)).SetNodeID(nodeID).SetStatus(status).SetGpuType(typ)
			if dispatched != nil {
				u.SetDispatchedAt(*dispatched)
			}
			if started != nil {
				u.SetStartedAt(*started)
			}
			if finished != nil {
				u.SetFinishedAt(*finished)
			}
			if err := u.Exec(fixture.Sys()); err != nil {
				t.Fatal(err)
			}
		}
		at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }
		// 2 A100 from dispatch at 10:30 to the end at 11:00.
		place(tn, g.ID, 2, "A100", service.StatusComplete, at(30*time.Minute), at(40*time.Minute), at(time.Hour))
		// 1 A100 from start (not dispatched: an older row) at 11:00, running.
		place(tn, g.ID, 1, "A100", service.StatusRunning, nil, at(time.Hour), nil)
		// 1 T4 finished before the window.
		place(tn, g.ID, 1, "T4", service.StatusComplete, at(-2*time.Hour), at(-2*time.Hour), at(-time.Hour))
		// Never started, never dispatched: nothing.
		place(tn, g.ID, 1, "A100", service.StatusCancelled, nil, nil, nil)
		// Another tenant's node, not listed.
		place(other, theirs.ID, 4, "A100", service.StatusRunning, at(0), at(0), nil)

		w := timewindow.Window{From: t0, Step: time.Hour, Steps: 2, Now: t0.Add(2 * time.Hour)}
		ns, err := tn.DB.Ent.Node.Query().Order(ent.Asc(node.FieldName)).All(tn.As(member))
		if err != nil {
			t.Fatal(err)
		}
		svc := &nodes.Service{Ent: tn.DB.Ent}
		got, err := svc.GPUHistory(tn.As(member), ns, w)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprint([]nodes.GPUUse{
			{NodeID: g.ID, Type: "A100", Count: 4, Booked: []float64{1, 1}},
			{NodeID: g.ID, Type: "T4", Count: 1, Booked: []float64{0, 0}},
		})
		if fmt.Sprint(got) != want {
			t.Errorf("history\n%v\nwant\n%v", got, want)
		}
	})
}
