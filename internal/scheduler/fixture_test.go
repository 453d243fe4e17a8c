package scheduler_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/inventory"
	"github.com/levers9/levers9/internal/jobs/jobstate"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/scheduler"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

var t0 = fixture.T0

// world is a tenant with its default queue on a fresh database.
type world struct {
	url   string
	db    *database.DB
	tn    *fixture.Tenant
	sys   context.Context
	ten   string
	env   string
	user  string
	queue string // the default queue's ID
}

func open(t testing.TB, url string) *database.DB {
	t.Helper()
	db, err := database.Open(context.Background(), url, fixture.Log())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func newFixture(t testing.TB, url string) *world {
	t.Helper()
	tn := fixture.New(t, url, fixture.TenantOptions{Slug: "sched", Policy: tenant.BudgetPolicyFinish})
	return &world{url: url, db: tn.DB, tn: tn, sys: fixture.Sys(), ten: tn.ID, env: tn.Env, user: tn.Admin.ID, queue: tn.DefaultQueue}
}

func (f *world) scheduler(db *database.DB) *scheduler.Service {
	return &scheduler.Service{DB: db, Log: slog.New(slog.DiscardHandler), Now: time.Now}
}

func (f *world) addQueue(t testing.TB, name string) string {
	t.Helper()
	return f.tn.AddQueue(t, name).ID
}

// inv is an inventory: "H100:8"-style GPU counts.
func inv(cpus float64, memMiB int64, gpus map[string]int) inventory.Inventory {
	i := inventory.Inventory{CPUs: cpus, MemoryMiB: memMiB}
	for t, n := range gpus {
		i.GPUs = append(i.GPUs, inventory.GPU{Type: t, Count: n})
	}
	return i
}

func (f *world) nodeCreate(c *ent.Client, name string, i inventory.Inventory, online bool) *ent.NodeCreate {
	st := node.StatusOffline
	if online {
		st = node.StatusOnline
	}
	return c.Node.Create().SetTenantID(f.ten).SetName(name).SetInventory(i).SetStatus(st)
}

// addNode adds a node serving queues.
func (f *world) addNode(t testing.TB, name string, i inventory.Inventory, online bool, queues ...string) string {
	t.Helper()
	return f.tn.AddNode(t, fixture.Node{Name: name, Inventory: i, Offline: !online, Queues: queues}).ID
}

// svc is a service request.
type svc struct {
	cpu   float64
	mem   int64
	gpus  int
	types []string
	image string
	ports []jobspec.Port
}

// jobSpec is a job to seed.
type jobSpec struct {
	queue    string
	priority int
	created  time.Time
	services []svc
	mounts   []jobspec.Mount
}

// addJobs inserts pending jobs in one transaction, in bulk, and returns
// their IDs in order.
func (f *world) addJobs(t testing.TB, specs []jobSpec) []string {
	t.Helper()
	var ids []string
	if err := f.db.InTx(f.sys, func(tx *database.Tx) error { return f.insertJobs(tx, specs, &ids) }); err != nil {
		t.Fatal(err)
	}
	return ids
}

// insertJobs inserts jobs in batches with CreateBulk, appending their IDs
// to ids when it is not nil.
func (f *world) insertJobs(tx *database.Tx, specs []jobSpec, ids *[]string) error {
	const batch = 500
	// A job's first reason, as submission gives it (jobstate.ReasonSubmitted).
	reasons := map[string]string{}
	for _, s := range specs {
		if _, ok := reasons[s.queue]; ok {
			continue
		}
		q, err := tx.Ent.Queue.Get(f.sys, s.queue)
		if err != nil {
			return err
		}
		reasons[s.queue] = jobstate.ReasonSubmitted(q.Name, q.Backlogged)
	}
	for start := 0; start < len(specs); start += batch {
		part := specs[start:min(start+batch, len(specs))]
		jb := make([]*ent.JobCreate, len(part))
		for i, s := range part {
			requests := make([]jobspec.Service, len(s.services))
			for k, r := range s.services {
				requests[k] = jobspec.Service{CPU: r.cpu, MemoryMiB: r.mem}
			}
			cpu, mem := jobspec.Job{Services: requests}.SmallestRequest() // as submission sets them
			jb[i] = tx.Ent.Job.Create().SetTenantID(f.ten).SetEnvironmentID(f.env).
				SetSpec(jobspec.Job{Mounts: s.mounts}).SetQueueID(s.queue).SetOwnerID(f.user).
				SetPriority(s.priority).SetCreatedAt(s.created).SetStatusReason(reasons[s.queue]).
				SetSmallestCPU(cpu).SetSmallestMemoryMib(mem)
		}
		jobs, err := tx.Ent.Job.CreateBulk(jb...).Save(f.sys)
		if err != nil {
			return err
		}
		var sb []*ent.ServiceCreate
		for i, s := range part {
			if ids != nil {
				*ids = append(*ids, jobs[i].ID)
			}
			for k, r := range s.services {
				sb = append(sb, tx.Ent.Service.Create().SetTenantID(f.ten).SetEnvironmentID(f.env).
					SetJobID(jobs[i].ID).SetName(fmt.Sprintf("s%d", k)).
					SetCPU(r.cpu).SetMemoryMib(r.mem).SetGpus(r.gpus).SetGpuTypes(r.types).
					SetImage(r.image).SetPorts(r.ports))
			}
		}
		// Bulk inserts bind every column: keep a batch's services below
		// SQLite's and PostgreSQL's parameter limits.
		for part := range slices.Chunk(sb, 1000) {
			if _, err := tx.Ent.Service.CreateBulk(part...).Save(f.sys); err != nil {
				return err
			}
		}
	}
	return nil
}

// addRunning adds a job of queue already running on nodeID.
func (f *world) addRunning(t testing.TB, queue, nodeID string, r svc, gpuType string) string {
	t.Helper()
	id := f.addJobs(t, []jobSpec{{queue: queue, created: t0, services: []svc{r}}})[0]
	if err := f.db.Ent.Job.UpdateOneID(id).SetStatus("RUNNING").Exec(f.sys); err != nil {
		t.Fatal(err)
	}
	err := f.db.Ent.Service.Update().Where(service.JobID(id)).
		SetStatus(service.StatusRunning).SetNodeID(nodeID).SetGpuType(gpuType).Exec(f.sys)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
