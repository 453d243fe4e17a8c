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
	"github.com/levers9/levers9/internal/inventory"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/scheduler"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/viewer"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fixture is a tenant with its default queue on a fresh database.
type fixture struct {
	url   string
	db    *database.DB
	sys   context.Context
	ten   string
	env   string
	user  string
	queue string // the default queue's ID
}

func open(t testing.TB, url string) *database.DB {
	t.Helper()
	db, err := database.Open(context.Background(), url, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func newFixture(t testing.TB, url string) *fixture {
	t.Helper()
	db := open(t, url)
	ctx := context.Background()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	sys := viewer.SystemContext(ctx)
	tn, admin, err := (&tenancy.Service{DB: db, Log: slog.New(slog.DiscardHandler)}).CreateTenant(sys, tenancy.NewTenant{
		Name: "Sched", Slug: "sched", BudgetPolicy: tenant.BudgetPolicyFinish, AdminEmail: "admin@sched.test", AdminPassword: "correct horse battery",
	})
	if err != nil {
		t.Fatal(err)
	}
	env, err := tenancy.MainEnvironmentID(ctx, db.Ent, tn.ID)
	if err != nil {
		t.Fatal(err)
	}
	q, err := db.Ent.Queue.Query().First(sys)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{url: url, db: db, sys: sys, ten: tn.ID, env: env, user: admin.ID, queue: q.ID}
}

func (f *fixture) scheduler(db *database.DB) *scheduler.Service {
	return &scheduler.Service{DB: db, Log: slog.New(slog.DiscardHandler), Now: time.Now}
}

func (f *fixture) addQueue(t testing.TB, name string) string {
	t.Helper()
	q, err := f.db.Ent.Queue.Create().SetTenantID(f.ten).SetName(name).Save(f.sys)
	if err != nil {
		t.Fatal(err)
	}
	return q.ID
}

// inv is an inventory: "H100:8"-style GPU counts.
func inv(cpus float64, memMiB int64, gpus map[string]int) inventory.Inventory {
	i := inventory.Inventory{CPUs: cpus, MemoryMiB: memMiB}
	for t, n := range gpus {
		i.GPUs = append(i.GPUs, inventory.GPU{Type: t, Count: n})
	}
	return i
}

func (f *fixture) nodeCreate(c *ent.Client, name string, i inventory.Inventory, online bool) *ent.NodeCreate {
	st := node.StatusOffline
	if online {
		st = node.StatusOnline
	}
	return c.Node.Create().SetTenantID(f.ten).SetName(name).SetInventory(i).SetStatus(st)
}

// addNode adds a node serving queues.
func (f *fixture) addNode(t testing.TB, name string, i inventory.Inventory, online bool, queues ...string) string {
	t.Helper()
	n, err := f.nodeCreate(f.db.Ent, name, i, online).Save(f.sys)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range queues {
		if err := f.db.Ent.Queue.UpdateOneID(q).AddNodeIDs(n.ID).Exec(f.sys); err != nil {
			t.Fatal(err)
		}
	}
	return n.ID
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
func (f *fixture) addJobs(t testing.TB, specs []jobSpec) []string {
	t.Helper()
	var ids []string
	if err := f.db.InTx(f.sys, func(tx *database.Tx) error { return f.insertJobs(tx, specs, &ids) }); err != nil {
		t.Fatal(err)
	}
	return ids
}

// insertJobs inserts jobs in batches with CreateBulk, appending their IDs
// to ids when it is not nil.
func (f *fixture) insertJobs(tx *database.Tx, specs []jobSpec, ids *[]string) error {
	const batch = 500
	for start := 0; start < len(specs); start += batch {
		part := specs[start:min(start+batch, len(specs))]
		jb := make([]*ent.JobCreate, len(part))
		for i, s := range part {
			jb[i] = tx.Ent.Job.Create().SetTenantID(f.ten).SetEnvironmentID(f.env).
				SetSpec(jobspec.Job{Mounts: s.mounts}).SetQueueID(s.queue).SetOwnerID(f.user).
				SetPriority(s.priority).SetCreatedAt(s.created).SetStatusReason("waiting to be scheduled")
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
func (f *fixture) addRunning(t testing.TB, queue, nodeID string, r svc, gpuType string) string {
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
