package dbstate_test

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/inventory"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/metrics/dbstate"
	"github.com/levers9/levers9/internal/scheduler"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// gather collects c and returns each family's series as
// "label:value,…=number", sorted.
func gather(c prometheus.Collector) (map[string][]string, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	out := map[string][]string{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+":"+l.GetValue())
			}
			out[mf.GetName()] = append(out[mf.GetName()], fmt.Sprintf("%s=%g", strings.Join(ls, ","), m.GetGauge().GetValue()))
		}
		sort.Strings(out[mf.GetName()])
	}
	return out, err
}

// The collector reads jobs, pending reasons, nodes and GPUs as the
// scheduler left them: two online nodes and an offline one (whose GPUs
// count for nothing), a job placed on GPUs, one too large for any node.
func TestCollectorReadsTheDatabase(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		tn := fixture.New(t, url, fixture.TenantOptions{Slug: "acme"})
		q := []string{tn.DefaultQueue}
		gpus := func(gs ...inventory.GPU) inventory.Inventory {
			return inventory.Inventory{CPUs: 8, MemoryMiB: 16384, GPUs: gs}
		}
		tn.AddNode(t, fixture.Node{Name: "n1", Queues: q, Inventory: gpus(inventory.GPU{Type: "A100", Count: 4})})
		tn.AddNode(t, fixture.Node{Name: "n2", Queues: q, Inventory: gpus(inventory.GPU{Type: "A100", Count: 2}, inventory.GPU{Type: "H100", Count: 1})})
		tn.AddNode(t, fixture.Node{Name: "n3", Queues: q, Offline: true, Inventory: gpus(inventory.GPU{Type: "A100", Count: 8})})
		tn.Price(t, tn.DefaultQueue, billing.Rates{GPU: []billing.GPURate{{Type: "A100", PerMinute: 1}, {Type: "H100", PerMinute: 2}}, Multiplier: 1})
		tn.Grant(t, ledger.Payer{TenantID: tn.ID, UserID: tn.Admin.ID}, 1000*billing.Unit)
		js := fixture.Jobs(tn.DB, nil)
		onGPUs := fixture.Service(1, 64)
		onGPUs.GPUs, onGPUs.GPUTypes = 3, []string{"A100"}
		tn.Submit(t, js, nil, onGPUs)
		tooLarge := fixture.Service(1, 64)
		tooLarge.GPUs, tooLarge.GPUTypes = 5, []string{"A100"}
		tn.Submit(t, js, nil, tooLarge)
		sched := &scheduler.Service{DB: tn.DB, Log: fixture.Log(), Now: time.Now}
		if placed, err := sched.ScheduleQueue(fixture.Sys(), tn.DefaultQueue); err != nil || placed != 1 {
			t.Fatalf("scheduling: placed %d, %v", placed, err)
		}
		tn.Submit(t, js, nil, jobspec.Service{Name: "main", Command: []string{"true"}, CPU: 1, MemoryMiB: 64}) // not scheduled yet

		got, err := gather(dbstate.New(tn.DB, fixture.Log(), dbstate.Config{Subscribers: func() int64 { return 7 }}))
		if err != nil {
			t.Fatal(err)
		}
		for family, want := range map[string][]string{
			"levers9_jobs":            {"queue:default,state:PENDING=3"},
			"levers9_jobs_pending":    {"queue:default,reason:starting=1", "queue:default,reason:too_large=1", "queue:default,reason:unscheduled=1"},
			"levers9_nodes":           {"state:offline=1", "state:online=2"},
			"levers9_gpus_booked":     {"type:A100=3", "type:H100=0"},
			"levers9_gpus_free":       {"type:A100=3", "type:H100=1"},
			"levers9_log_subscribers": {"=7"},
		} {
			if !slices.Equal(got[family], want) {
				t.Errorf("%s = %v, want %v", family, got[family], want)
			}
		}
		if len(got["levers9_river_jobs"]) != 0 {
			t.Errorf("levers9_river_jobs = %v on a database River never worked", got["levers9_river_jobs"])
		}

		// With the tenant label, each series says whose it is.
		got, err = gather(dbstate.New(tn.DB, fixture.Log(), dbstate.Config{TenantLabel: true}))
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"state:offline,tenant:acme=1", "state:online,tenant:acme=2"}; !slices.Equal(got["levers9_nodes"], want) {
			t.Errorf("levers9_nodes with tenants = %v, want %v", got["levers9_nodes"], want)
		}
		if want := []string{"queue:default,state:PENDING,tenant:acme=3"}; !slices.Equal(got["levers9_jobs"], want) {
			t.Errorf("levers9_jobs with tenants = %v, want %v", got["levers9_jobs"], want)
		}
	})
}

// A database that fails makes a scrape error, not a panic, and the
// families that need no database are still served.
func TestCollectorReportsDatabaseErrors(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		db := fixture.Open(t, url)
		c := dbstate.New(db, fixture.Log(), dbstate.Config{Subscribers: func() int64 { return 1 }, Timeout: time.Second})
		db.SQL.Close()
		got, err := gather(c)
		if err == nil {
			t.Fatal("no error from a closed database")
		}
		if want := []string{"=1"}; !slices.Equal(got["levers9_log_subscribers"], want) {
			t.Errorf("levers9_log_subscribers = %v, want %v", got["levers9_log_subscribers"], want)
		}
	})
}
