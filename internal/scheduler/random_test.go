package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/inventory"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/scheduler"
	"github.com/levers9/levers9/internal/scheduling"
)

var gpuTypes = []string{"H100", "A100", "L4"}

func randomInventory(rng *rand.Rand) map[string]int {
	gpus := map[string]int{}
	switch r := rng.IntN(10); {
	case r < 4: // CPU only
	case r < 8:
		gpus[gpuTypes[rng.IntN(3)]] = 1 + rng.IntN(8)
	default:
		gpus[gpuTypes[rng.IntN(3)]] = 1 + rng.IntN(4)
		gpus[gpuTypes[rng.IntN(3)]] = 1 + rng.IntN(4)
	}
	return gpus
}

// randomNodeInventory is a node of random size, sometimes running
// containers, its GPUs sometimes with device IDs reported.
func randomNodeInventory(rng *rand.Rand, name string) inventory.Inventory {
	i := inv(float64(4+rng.IntN(61)), int64(8+rng.IntN(249))*gib, randomInventory(rng))
	if rng.IntN(2) == 0 {
		i.Runtime = inventory.RuntimeDocker
	}
	for k, g := range i.GPUs {
		if rng.IntN(2) == 0 {
			for d := range g.Count {
				i.GPUs[k].Devices = append(i.GPUs[k].Devices, fmt.Sprintf("GPU-%s-%s-%d", name, g.Type, d))
			}
		}
	}
	return i
}

func randomJob(rng *rand.Rand, queue string, created time.Time) jobSpec {
	j := jobSpec{queue: queue, priority: rng.IntN(3), created: created}
	ports := []int{8000, 8001}
	for k := range 1 + rng.IntN(3) {
		s := svc{cpu: float64(1+rng.IntN(24)) / 2, mem: int64(1+rng.IntN(48)) * gib}
		if rng.IntN(5) == 0 {
			s.image = "busybox"
		}
		if rng.IntN(5) == 0 && k < len(ports) { // each service its own port
			s.ports = []jobspec.Port{{Name: "p", Port: ports[k]}}
		}
		if rng.IntN(10) < 4 {
			s.gpus = 1 + rng.IntN(4)
			// A preference list, sometimes naming a type no node has.
			pool := append(slices.Clone(gpuTypes), "B200")
			rng.Shuffle(len(pool), func(a, b int) { pool[a], pool[b] = pool[b], pool[a] })
			s.types = pool[:1+rng.IntN(3)]
		}
		j.services = append(j.services, s)
	}
	return j
}

// TestConcurrentRandom places random jobs on random nodes from several
// replicas (separate database handles) at once, while jobs start, end and
// arrive, and checks from the database that no node is over-committed, has
// a device or port booked twice or an image without containers, no job is
// split, and that what still waits really fits nowhere.
func TestConcurrentRandom(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 7))
		f := newFixture(t, url)
		queues := []string{f.queue, f.addQueue(t, "q2"), f.addQueue(t, "q3")}
		for i := range 30 {
			var member []string
			for _, q := range queues {
				if rng.IntN(2) == 0 {
					member = append(member, q)
				}
			}
			if len(member) == 0 {
				member = queues[i%3 : i%3+1]
			}
			name := fmt.Sprintf("n%02d", i)
			f.addNode(t, name, randomNodeInventory(rng, name), rng.IntN(10) != 0, member...)
		}
		specs := make([]jobSpec, 400)
		for i := range specs {
			specs[i] = randomJob(rng, queues[rng.IntN(3)], t0.Add(time.Duration(i)*time.Second))
		}
		f.addJobs(t, specs)

		const replicas = 4
		ctx := context.Background()
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			raced   int
			placed  int
			failure error
		)
		for r := range replicas {
			s := f.scheduler(open(t, url))
			order := slices.Clone(queues)
			rr := rand.New(rand.NewPCG(seed, uint64(r)))
			wg.Go(func() {
				for range 8 {
					rr.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
					for _, q := range order {
						n, err := s.ScheduleQueue(ctx, q)
						mu.Lock()
						placed += n
						switch {
						case errors.Is(err, scheduler.ErrRaced):
							raced++
						case err != nil && failure == nil:
							failure = err
						}
						mu.Unlock()
					}
				}
			})
		}
		churn := open(t, url)
		wg.Go(func() {
			cr := rand.New(rand.NewPCG(seed, 99))
			for i := range 40 {
				if err := churnOnce(ctx, f, churn, cr, queues, i); err != nil {
					mu.Lock()
					failure = errors.Join(failure, err)
					mu.Unlock()
					return
				}
			}
		})
		wg.Wait()
		if failure != nil {
			t.Fatal(failure)
		}
		t.Logf("placed %d jobs, %d passes raced", placed, raced)
		checkNoOvercommit(t, f)
		// Settled: a last pass per queue, then nothing that waits fits.
		for _, q := range queues {
			if _, err := f.scheduler(f.db).ScheduleQueue(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		checkNoOvercommit(t, f)
		checkWaitersFitNowhere(t, f, queues)
	})
}

// churnOnce starts or ends a random placed job, or submits new ones.
func churnOnce(ctx context.Context, f *world, db *database.DB, rng *rand.Rand, queues []string, i int) error {
	placed, err := db.Ent.Job.Query().
		Where(job.StatusIn(job.StatusPending, job.StatusRunning), job.HasServicesWith(service.NodeIDNotNil())).
		IDs(f.sys)
	if err != nil {
		return err
	}
	switch {
	case rng.IntN(3) == 0:
		specs := make([]jobSpec, 5)
		for k := range specs {
			specs[k] = randomJob(rng, queues[rng.IntN(3)], t0.Add(time.Hour+time.Duration(i*5+k)*time.Second))
		}
		return db.InTx(f.sys, func(tx *database.Tx) error { return f.insertJobs(tx, specs, nil) })
	case len(placed) > 0:
		id := placed[rng.IntN(len(placed))]
		st := job.StatusRunning
		if rng.IntN(2) == 0 {
			st = job.StatusComplete
		}
		return db.InTx(f.sys, func(tx *database.Tx) error {
			if err := tx.Ent.Job.UpdateOneID(id).SetStatus(st).Exec(f.sys); err != nil {
				return err
			}
			return tx.Ent.Service.Update().Where(service.JobID(id)).SetStatus(service.Status(st)).Exec(f.sys)
		})
	}
	return nil
}

// held is what a node's non-terminal services hold.
type held struct {
	scheduling.Resources
	booked map[string][]string // GPU type → devices
	ports  []int
	images bool
}

// load reads the nodes and what their non-terminal services hold.
func loadNodes(t *testing.T, f *world) ([]*ent.Node, map[string]held) {
	t.Helper()
	nodes, err := f.db.Ent.Node.Query().WithQueues().All(f.sys)
	if err != nil {
		t.Fatal(err)
	}
	svcs, err := f.db.Ent.Service.Query().
		Where(service.NodeIDNotNil(), service.StatusIn(service.StatusPending, service.StatusRunning)).
		All(f.sys)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]held{}
	for _, s := range svcs {
		u := used[s.NodeID]
		u.CPU += s.CPU
		u.MemoryMiB += s.MemoryMib
		u.images = u.images || s.Image != ""
		for _, p := range s.Ports {
			if p.Port > 0 {
				u.ports = append(u.ports, p.Port)
			}
		}
		if s.Gpus > 0 {
			if !slices.Contains(s.GpuTypes, s.GpuType) {
				t.Errorf("service %s got GPU type %q, not among %v", s.ID, s.GpuType, s.GpuTypes)
			}
			if len(s.GpuDevices) != s.Gpus {
				t.Errorf("service %s asks %d GPUs, has devices %v", s.ID, s.Gpus, s.GpuDevices)
			}
			if u.GPUs == nil {
				u.GPUs, u.booked = map[string]int{}, map[string][]string{}
			}
			u.GPUs[s.GpuType] += s.Gpus
			u.booked[s.GpuType] = append(u.booked[s.GpuType], s.GpuDevices...)
		}
		used[s.NodeID] = u
	}
	return nodes, used
}

func capacity(n *ent.Node) scheduling.Resources {
	r := scheduling.Resources{CPU: n.Inventory.CPUs, MemoryMiB: n.Inventory.MemoryMiB, GPUs: map[string]int{}}
	for _, g := range n.Inventory.GPUs {
		r.GPUs[g.Type] += g.Count
	}
	return r
}

func checkNoOvercommit(t *testing.T, f *world) {
	t.Helper()
	nodes, used := loadNodes(t, f)
	for _, n := range nodes {
		c, u := capacity(n), used[n.ID]
		if u.CPU > c.CPU || u.MemoryMiB > c.MemoryMiB {
			t.Errorf("node %s over-committed: uses %+v of %+v", n.Name, u, c)
		}
		if u.images && !n.Inventory.Containers() {
			t.Errorf("node %s runs images on the %s runtime", n.Name, n.Inventory.NodeRuntime())
		}
		if p := slices.Sorted(slices.Values(u.ports)); len(slices.Compact(p)) != len(u.ports) {
			t.Errorf("node %s has a port booked twice: %v", n.Name, u.ports)
		}
		for typ, ids := range u.booked {
			var all []string
			for _, g := range n.Inventory.GPUs {
				if g.Type == typ {
					all = append(all, g.DeviceIDs()...)
				}
			}
			for i, id := range ids {
				if !slices.Contains(all, id) || slices.Contains(ids[:i], id) {
					t.Errorf("node %s: %s device %s booked twice or not the node's: %v of %v", n.Name, typ, id, ids, all)
				}
			}
		}
		for typ, k := range u.GPUs {
			if k > c.GPUs[typ] {
				t.Errorf("node %s over-committed: %d %s of %d", n.Name, k, typ, c.GPUs[typ])
			}
		}
	}
	// No job split; every placed job on a node of its queue.
	jobs, err := f.db.Ent.Job.Query().WithServices(func(q *ent.ServiceQuery) { q.WithNode(func(q *ent.NodeQuery) { q.WithQueues() }) }).All(f.sys)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		where := map[string]bool{}
		for _, s := range j.Edges.Services {
			where[s.NodeID] = true
			if n := s.Edges.Node; n != nil && !slices.ContainsFunc(n.Edges.Queues, func(q *ent.Queue) bool { return q.ID == j.QueueID }) {
				t.Errorf("job %s placed on %s, outside its queue", j.ID, n.Name)
			}
		}
		if len(where) > 1 {
			t.Errorf("job %s split over %v", j.ID, where)
		}
	}
}

func checkWaitersFitNowhere(t *testing.T, f *world, queues []string) {
	t.Helper()
	nodes, used := loadNodes(t, f)
	waiting, err := f.db.Ent.Job.Query().
		Where(job.StatusEQ(job.StatusPending), job.Not(job.HasServicesWith(service.NodeIDNotNil()))).
		WithServices().All(f.sys)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range queues {
		var sn []scheduling.Node
		for _, n := range nodes {
			if n.Status == node.StatusOnline && slices.ContainsFunc(n.Edges.Queues, func(x *ent.Queue) bool { return x.ID == q }) {
				u := used[n.ID]
				sn = append(sn, scheduling.Node{ID: n.ID, Name: n.Name, Capacity: capacity(n), Used: u.Resources,
					Booked: u.booked, Ports: u.ports, Containers: n.Inventory.Containers()})
			}
		}
		for _, j := range waiting {
			if j.QueueID != q {
				continue
			}
			sj := scheduling.Job{ID: j.ID}
			for _, s := range j.Edges.Services {
				ss := scheduling.Service{Name: s.Name, CPU: s.CPU, MemoryMiB: s.MemoryMib, GPUs: s.Gpus, GPUTypes: s.GpuTypes, Image: s.Image}
				for _, p := range s.Ports {
					ss.Ports = append(ss.Ports, p.Port)
				}
				sj.Services = append(sj.Services, ss)
			}
			p, ok, _, err := scheduling.Place(sj, sn)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				t.Errorf("job %s waits (%q) but fits on %s", j.ID, j.StatusReason, p.NodeID)
			}
			if j.StatusReason == "waiting to be scheduled" || j.StatusReason == "" {
				t.Errorf("job %s waits without a reason: %q", j.ID, j.StatusReason)
			}
		}
	}
}
