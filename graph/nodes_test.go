package graph_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/queue"
	entservice "github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/graph"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/inventory"
	"github.com/levers9/levers9/internal/viewer"
)

// TestNodeBookedAndFree: a node shows what pending and running services
// placed on it book (CPU, memory, GPU devices per type) and what remains
// free; a page of nodes costs one query of services, however many nodes
// and fields it has.
func TestNodeBookedAndFree(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		var serviceQueries atomic.Int64
		e := newEnv(t, url, func(r *graph.Resolver) {
			drv := dialect.DebugWithContext(entsql.OpenDB(r.DB.Dialect, r.DB.SQL), func(_ context.Context, args ...any) {
				for _, a := range args {
					if s, ok := a.(string); ok && strings.Contains(s, "FROM \"services\"") || ok && strings.Contains(s, "FROM `services`") {
						serviceQueries.Add(1)
					}
				}
			})
			r.Ent = ent.NewClient(ent.Driver(drv))
			r.NodeService.Ent = r.Ent // booked and free are read through it
		})
		a := e.newTenant("booking")
		sys := viewer.SystemContext(context.Background())
		q, err := e.db.Ent.Queue.Query().Where(queue.TenantID(a.ent.ID), queue.Name("default")).Only(sys)
		if err != nil {
			t.Fatal(err)
		}
		e.gql(a.adminToken, `mutation($q: ID!) { updateQueue(id: $q, input: {gpuPrices: [{type: "H100", perMinute: 0}]}) { id } }`, vars{"q": q.ID}).ok(t)
		var gpuNode *ent.Node
		for i, name := range []string{"gpu-1", "cpu-1", "cpu-2"} {
			inv := inventory.Inventory{CPUs: 8, MemoryMiB: 16384, Runtime: inventory.RuntimeDocker}
			if i == 0 {
				inv.GPUs = []inventory.GPU{{Type: "H100", Count: 2, Devices: []string{"GPU-a", "GPU-b"}}}
			}
			n, err := e.db.Ent.Node.Create().SetTenantID(a.ent.ID).SetName(name).SetInventory(inv).AddQueueIDs(q.ID).Save(sys)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				gpuNode = n
			}
		}
		submit := func() string {
			var out struct{ SubmitJob struct{ ID string } }
			r := e.gql(a.memberToken, `mutation { submitJob(spec: {queue: "default", services: [
				{name: "train", command: ["true"], cpu: 2, memoryMiB: 1024, gpus: 1, gpuTypes: ["H100"]},
				{name: "side", command: ["true"]}]}) { id } }`, nil)
			r.ok(t)
			r.decode(t, &out)
			return out.SubmitJob.ID
		}
		place := func(jobID string, status entservice.Status) {
			if _, err := e.db.Ent.Service.Update().Where(entservice.JobID(jobID)).SetNodeID(gpuNode.ID).SetStatus(status).Save(sys); err != nil {
				t.Fatal(err)
			}
			if _, err := e.db.Ent.Service.Update().Where(entservice.JobID(jobID), entservice.Name("train")).
				SetGpuType("H100").SetGpuDevices([]string{"GPU-b"}).Save(sys); err != nil {
				t.Fatal(err)
			}
		}
		running, done := submit(), submit()
		place(running, entservice.StatusRunning)
		place(done, entservice.StatusComplete) // ended: holds nothing

		query := `{ nodes(orderBy: {field: NAME}) { edges { node { name inventory { runtime }
			booked { cpu memoryMiB gpus { type count devices } }
			free { cpu memoryMiB gpus { type count devices } } } } } }`
		serviceQueries.Store(0)
		r := e.gql(a.memberToken, query, nil)
		r.ok(t)
		want := `{"nodes":{"edges":[` +
			`{"node":{"name":"cpu-1","inventory":{"runtime":"docker"},"booked":{"cpu":0,"memoryMiB":0,"gpus":[]},"free":{"cpu":8,"memoryMiB":16384,"gpus":[]}}},` +
			`{"node":{"name":"cpu-2","inventory":{"runtime":"docker"},"booked":{"cpu":0,"memoryMiB":0,"gpus":[]},"free":{"cpu":8,"memoryMiB":16384,"gpus":[]}}},` +
			`{"node":{"name":"gpu-1","inventory":{"runtime":"docker"},` +
			`"booked":{"cpu":3,"memoryMiB":2048,"gpus":[{"type":"H100","count":1,"devices":["GPU-b"]}]},` +
			`"free":{"cpu":5,"memoryMiB":14336,"gpus":[{"type":"H100","count":1,"devices":["GPU-a"]}]}}}]}}`
		if got := string(r.Data); got != want {
			t.Fatalf("nodes =\n%s\nwant\n%s", got, want)
		}
		if n := serviceQueries.Load(); n != 1 {
			t.Errorf("a page of 3 nodes with booked and free read services %d times, want once", n)
		}

		// The service shows its devices.
		r = e.gql(a.memberToken, `query($id: ID!) { node(id: $id) { ... on Job { services { name gpuDevices } } } }`, vars{"id": running})
		r.ok(t)
		if got := string(r.Data); !strings.Contains(got, `{"name":"train","gpuDevices":["GPU-b"]}`) {
			t.Errorf("job services = %s, want train's device GPU-b", got)
		}
	})
}

// TestStoragePathAdminsOnly: where a storage keeps its files on a host is
// a tenant admin's business; members read null and cannot filter by it.
func TestStoragePathAdminsOnly(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		e := newEnv(t, url)
		a := e.newTenant("paths")
		sys := viewer.SystemContext(context.Background())
		n, err := e.db.Ent.Node.Create().SetTenantID(a.ent.ID).SetName("disk-1").Save(sys)
		if err != nil {
			t.Fatal(err)
		}
		e.gql(a.adminToken, `mutation($n: ID!) { createStorage(input: {name: "scratch", kind: NODE, nodeID: $n, path: "/srv/scratch"}) { id } }`, vars{"n": n.ID}).ok(t)
		list := `{ storages(orderBy: {field: NAME}) { edges { node { name kind path } } } }`

		r := e.gql(a.adminToken, list, nil)
		r.ok(t)
		admin := string(r.Data)
		if !strings.Contains(admin, `{"name":"scratch","kind":"NODE","path":"/srv/scratch"}`) ||
			!strings.Contains(admin, `"kind":"LOCAL","path":"/`) {
			t.Errorf("admin's storages = %s, want both paths", admin)
		}

		r = e.gql(a.memberToken, list, nil)
		r.ok(t)
		if got, want := string(r.Data), `{"storages":{"edges":[{"node":{"name":"local","kind":"LOCAL","path":null}},{"node":{"name":"scratch","kind":"NODE","path":null}}]}}`; got != want {
			t.Errorf("member's storages = %s, want %s", got, want)
		}
		// No guessing it by filtering either.
		r = e.gql(a.memberToken, `{ storages(where: {pathHasPrefix: "/"}) { totalCount } }`, nil)
		if len(r.Errors) == 0 || !strings.Contains(r.Errors[0].Message, "pathHasPrefix") {
			t.Errorf("filter by path: %s %+v, want a validation error", r.Data, r.Errors)
		}
	})
}
