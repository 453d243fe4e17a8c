package scheduler_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/inventory"
	"github.com/levers9/levers9/internal/jobspec"
)

// pass runs one scheduling pass over the default queue.
func (f *world) pass(t *testing.T) int {
	t.Helper()
	n, err := f.scheduler(f.db).ScheduleQueue(context.Background(), f.queue)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// devices are the GPU devices booked for a job's services, by service name.
func (f *world) devices(t *testing.T, jobID string) map[string][]string {
	t.Helper()
	svcs, err := f.db.Ent.Service.Query().Where(service.JobID(jobID)).All(f.sys)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, s := range svcs {
		if s.GpuDevices != nil {
			out[s.Name] = s.GpuDevices
		}
	}
	return out
}

func (f *world) finish(t *testing.T, jobID string) {
	t.Helper()
	if err := f.db.Ent.Service.Update().Where(service.JobID(jobID)).SetStatus(service.StatusComplete).Exec(f.sys); err != nil {
		t.Fatal(err)
	}
}

func waits(t *testing.T, f *world, jobID, want string) {
	t.Helper()
	if got, reason := f.placedOn(t, jobID), f.reason(t, jobID); got != "" || !strings.Contains(reason, want) {
		t.Fatalf("job on %q, reason %q; want waiting with %q", got, reason, want)
	}
}

func on(t *testing.T, f *world, jobID, want string) {
	t.Helper()
	if got := f.placedOn(t, jobID); got != want {
		t.Fatalf("job on %q (reason %q), want %q", got, f.reason(t, jobID), want)
	}
}

func gpuJob(q string, types ...string) jobSpec {
	return jobSpec{queue: q, created: t0, services: []svc{{cpu: 1, mem: gib, gpus: 1, types: types}}}
}

// Two 1-GPU jobs on a 2-GPU node get different devices, also when placed
// by different passes; a third waits with a reason until one ends.
func TestScheduleBooksDevices(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		f := newFixture(t, url)
		i := inv(16, 64*gib, nil)
		i.GPUs = []inventory.GPU{{Type: "H100", Count: 2, Devices: []string{"GPU-b7", "GPU-a3"}}}
		f.addNode(t, "g", i, true, f.queue)
		first := f.addJobs(t, []jobSpec{gpuJob(f.queue, "H100")})[0]
		if n := f.pass(t); n != 1 {
			t.Fatalf("placed %d", n)
		}
		more := f.addJobs(t, []jobSpec{gpuJob(f.queue, "H100"), gpuJob(f.queue, "H100")})
		second, third := more[0], more[1]
		if n := f.pass(t); n != 1 {
			t.Fatalf("placed %d", n)
		}
		if got := f.devices(t, first)["s0"]; !slices.Equal(got, []string{"GPU-b7"}) {
			t.Fatalf("first job has devices %v", got)
		}
		if got := f.devices(t, second)["s0"]; !slices.Equal(got, []string{"GPU-a3"}) {
			t.Fatalf("second job has devices %v", got)
		}
		waits(t, f, third, "waiting for 1 free H100 in queue default: 0 of 1 node has them")
		f.finish(t, first)
		if n := f.pass(t); n != 1 {
			t.Fatalf("placed %d after a job ended", n)
		}
		if got := f.devices(t, third)["s0"]; !slices.Equal(got, []string{"GPU-b7"}) {
			t.Fatalf("third job has devices %v", got)
		}
	})
}

// A service placed before devices were booked holds a GPU without an ID:
// it still counts, and new jobs get numbered devices around it.
func TestScheduleCountsServicesWithoutDevices(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		f := newFixture(t, url)
		n := f.addNode(t, "g", inv(16, 64*gib, map[string]int{"H100": 2}), true, f.queue)
		f.addRunning(t, f.queue, n, svc{cpu: 1, mem: gib, gpus: 1, types: []string{"H100"}}, "H100")
		ids := f.addJobs(t, []jobSpec{gpuJob(f.queue, "H100"), gpuJob(f.queue, "H100")})
		if n := f.pass(t); n != 1 {
			t.Fatalf("placed %d", n)
		}
		if got := f.devices(t, ids[0])["s0"]; !slices.Equal(got, []string{"0"}) {
			t.Fatalf("devices %v", got)
		}
		waits(t, f, ids[1], "waiting for 1 free H100")
	})
}

// A fixed port held on a node (declared, or picked by the agent) sends the
// next job asking for it to another node, and then makes it wait.
func TestScheduleBooksPorts(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		f := newFixture(t, url)
		ids := map[string]string{
			"a": f.addNode(t, "a", inv(8, 16*gib, nil), true, f.queue),
			"b": f.addNode(t, "b", inv(8, 16*gib, nil), true, f.queue),
		}
		web := jobSpec{queue: f.queue, created: t0, services: []svc{{cpu: 1, mem: gib, ports: []jobspec.Port{{Name: "http", Port: 8888}, {Name: "any"}}}}}
		first := f.addJobs(t, []jobSpec{web})[0]
		if n := f.pass(t); n != 1 {
			t.Fatalf("placed %d", n)
		}
		more := f.addJobs(t, []jobSpec{web, web})
		if n := f.pass(t); n != 1 {
			t.Fatalf("placed %d", n)
		}
		a, b := f.placedOn(t, first), f.placedOn(t, more[0])
		if a == "" || b == "" || a == b {
			t.Fatalf("two jobs with port 8888 on %q and %q", a, b)
		}
		waits(t, f, more[1], "waiting for port 8888 in queue default: 0 of 2 nodes have it free")

		// A port the agent picked for a running service is held too: the
		// job asking for it goes to a although b, busier, fits better.
		err := f.db.Ent.Service.Update().Where(service.JobID(more[0])).
			SetStatus(service.StatusRunning).SetHostPorts([]jobspec.Port{{Name: "http", Port: 8888}, {Name: "any", Port: 9000}}).Exec(f.sys)
		if err != nil {
			t.Fatal(err)
		}
		f.addRunning(t, f.queue, ids[b], svc{cpu: 4, mem: gib}, "")
		picked := jobSpec{queue: f.queue, created: t0, services: []svc{{cpu: 1, mem: gib, ports: []jobspec.Port{{Name: "p", Port: 9000}}}}}
		last := f.addJobs(t, []jobSpec{picked})[0]
		if n := f.pass(t); n != 1 {
			t.Fatalf("placed %d", n)
		}
		on(t, f, last, a)
		waits(t, f, more[1], "waiting for port 8888")

		// Ports of ended services are free again.
		f.finish(t, first)
		if n := f.pass(t); n != 1 {
			t.Fatalf("placed %d", n)
		}
		on(t, f, more[1], a)
	})
}

// Two services of one job declaring one fixed port can never be placed.
func TestScheduleRefusesPortTwice(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		f := newFixture(t, url)
		f.addNode(t, "a", inv(8, 16*gib, nil), true, f.queue)
		p := []jobspec.Port{{Name: "http", Port: 80}}
		id := f.addJobs(t, []jobSpec{{queue: f.queue, created: t0, services: []svc{{cpu: 1, mem: gib, ports: p}, {cpu: 1, mem: gib, ports: p}}}})[0]
		f.pass(t)
		waits(t, f, id, `cannot be scheduled: job "`+id+`": port 80 is declared by services "s0" and "s1"`)
	})
}

// Images run only on nodes that run containers; a job that fits nowhere
// for that reason says so, and is placed once such a node joins.
func TestScheduleImagesNeedContainers(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		f := newFixture(t, url)
		f.addNode(t, "proc", inv(64, 64*gib, nil), true, f.queue)
		img := jobSpec{queue: f.queue, created: t0, services: []svc{{cpu: 1, mem: gib}, {cpu: 1, mem: gib, image: "python:3.12"}}}
		cmd := cpuJob(f.queue, 1, gib)
		ids := f.addJobs(t, []jobSpec{img, cmd})
		if n := f.pass(t); n != 1 {
			t.Fatalf("placed %d", n)
		}
		waits(t, f, ids[0], "waiting for a node that runs containers in queue default: 0 of 1 node runs images (docker)")
		on(t, f, ids[1], "proc")
		docker := inv(8, 16*gib, nil)
		docker.Runtime = inventory.RuntimeDocker
		f.addNode(t, "dock", docker, true, f.queue)
		if n := f.pass(t); n != 1 {
			t.Fatalf("placed %d", n)
		}
		on(t, f, ids[0], "dock")
	})
}

// A job mounting a bucket on node A's storage runs on A, never on B, even
// where B fits better; while A is offline it waits, naming A.
func TestScheduleNodeStoragePins(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		f := newFixture(t, url)
		a := f.addNode(t, "node-a", inv(64, 256*gib, nil), true, f.queue)
		b := f.addNode(t, "node-b", inv(8, 16*gib, nil), true, f.queue) // the best fit
		results := f.addBucket(t, "results", f.addNodeStorage(t, "disk-a", a))
		scratch := f.addBucket(t, "scratch", f.addNodeStorage(t, "disk-b", b))
		mount := func(ref string) jobSpec {
			j := cpuJob(f.queue, 1, gib)
			j.mounts = []jobspec.Mount{{Bucket: ref, Path: "/results"}}
			return j
		}
		both := mount("results")
		both.mounts = append(both.mounts, jobspec.Mount{Bucket: scratch, Path: "/scratch"})
		ids := f.addJobs(t, []jobSpec{mount("results"), mount(results), cpuJob(f.queue, 1, gib), both})
		if n := f.pass(t); n != 3 {
			t.Fatalf("placed %d", n)
		}
		on(t, f, ids[0], "node-a")
		on(t, f, ids[1], "node-a")
		on(t, f, ids[2], "node-b")
		waits(t, f, ids[3], "cannot be scheduled: bucket results is on the disk of node node-a and bucket scratch on that of node node-b; a job runs on one node")

		if err := f.db.Ent.Node.UpdateOneID(a).SetStatus(node.StatusOffline).Exec(f.sys); err != nil {
			t.Fatal(err)
		}
		late := f.addJobs(t, []jobSpec{mount("results")})[0]
		if n := f.pass(t); n != 0 {
			t.Fatalf("placed %d", n)
		}
		waits(t, f, late, "waiting for node node-a to be online in queue default: bucket results is on its disk")
	})
}

func (f *world) addNodeStorage(t *testing.T, name, nodeID string) string {
	t.Helper()
	s, err := f.db.Ent.Storage.Create().SetTenantID(f.ten).SetName(name).SetKind(storage.KindNode).
		SetPath("/srv/" + name).SetNodeID(nodeID).Save(f.sys)
	if err != nil {
		t.Fatal(err)
	}
	return s.ID
}

func (f *world) addBucket(t *testing.T, name, storageID string) string {
	t.Helper()
	b, err := f.db.Ent.Bucket.Create().SetTenantID(f.ten).SetName(name).SetStorageID(storageID).SetOwnerID(f.user).Save(f.sys)
	if err != nil {
		t.Fatal(err)
	}
	return b.ID
}
