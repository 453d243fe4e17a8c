package scheduling

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

const propertyRounds = 200

// TestScheduleProperties checks, on random queues, the invariants callers
// rely on, then that the result is exactly what the brute-force model of
// the policy gives.
func TestScheduleProperties(t *testing.T) {
	t.Parallel()
	for seed := range uint64(propertyRounds) {
		nodes, jobs := randomInput(rand.New(rand.NewPCG(seed, 42)))
		placed, waiting, err := Schedule(jobs, nodes)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		checkInvariants(t, seed, jobs, nodes, placed, waiting)
		wantPlaced, wantWaiting := modelSchedule(jobs, nodes)
		if !reflect.DeepEqual(placed, wantPlaced) {
			t.Fatalf("seed %d: placements differ from the model:\n got  %v\n want %v", seed, placed, wantPlaced)
		}
		for id := range wantWaiting {
			if _, ok := waiting[id]; !ok {
				t.Fatalf("seed %d: job %s should wait", seed, id)
			}
		}
	}
}

func checkInvariants(t *testing.T, seed uint64, jobs []Job, nodes []Node, placed []Placement, waiting map[string]Reason) {
	t.Helper()
	byJob := map[string]Job{}
	for _, j := range jobs {
		byJob[j.ID] = j
	}
	byNode := map[string]Node{}
	for _, n := range nodes {
		byNode[n.ID] = n
	}
	if len(placed)+len(waiting) != len(jobs) {
		t.Fatalf("seed %d: %d placed + %d waiting, %d jobs", seed, len(placed), len(waiting), len(jobs))
	}

	// Every placement: a known node the job may run on, a type from each
	// GPU service's list, that many devices of the node's of that type,
	// and no node given more than it had free, a device twice, or a port
	// twice.
	type sum struct {
		cpu     float64
		mem     int64
		gpus    map[string]int
		devices map[string]bool // type + "/" + device ID
		ports   map[int]bool
	}
	sums := map[string]*sum{}
	for _, p := range placed {
		j, ok := byJob[p.JobID]
		if !ok {
			t.Fatalf("seed %d: placed unknown job %s", seed, p.JobID)
		}
		if _, both := waiting[p.JobID]; both {
			t.Fatalf("seed %d: job %s both placed and waiting", seed, p.JobID)
		}
		n, ok := byNode[p.NodeID]
		if !ok {
			t.Fatalf("seed %d: job %s on unknown node %s", seed, p.JobID, p.NodeID)
		}
		if j.Pin.Node != "" && j.Pin.Node != n.ID {
			t.Fatalf("seed %d: job %s pinned to %s placed on %s", seed, j.ID, j.Pin.Node, n.ID)
		}
		s := sums[p.NodeID]
		if s == nil {
			s = &sum{gpus: map[string]int{}, devices: map[string]bool{}, ports: map[int]bool{}}
			for typ, ids := range n.Booked {
				for _, id := range ids {
					s.devices[typ+"/"+id] = true
				}
			}
			for _, port := range n.Ports {
				s.ports[port] = true
			}
			sums[p.NodeID] = s
		}
		gpuServices := 0
		for _, svc := range j.Services {
			if svc.Image != "" && !svc.Venv && !n.Containers {
				t.Fatalf("seed %d: job %s runs an image on %s, which runs no containers", seed, j.ID, n.ID)
			}
			for _, port := range svc.Ports {
				if s.ports[port] {
					t.Fatalf("seed %d: job %s got port %d on %s, held already", seed, j.ID, port, n.ID)
				}
				s.ports[port] = true
			}
			s.cpu += svc.CPU
			s.mem += svc.MemoryMiB
			if svc.GPUs == 0 {
				if p.Devices[svc.Name] != nil {
					t.Fatalf("seed %d: job %s service %s got devices without GPUs", seed, j.ID, svc.Name)
				}
				continue
			}
			gpuServices++
			typ := p.GPUType[svc.Name]
			if !slices.Contains(svc.GPUTypes, typ) {
				t.Fatalf("seed %d: job %s service %s got type %q, not in %v", seed, j.ID, svc.Name, typ, svc.GPUTypes)
			}
			s.gpus[typ] += svc.GPUs
			devs := p.Devices[svc.Name]
			if len(devs) != svc.GPUs {
				t.Fatalf("seed %d: job %s service %s asks %d GPUs, got devices %v", seed, j.ID, svc.Name, svc.GPUs, devs)
			}
			for _, id := range devs {
				if !slices.Contains(modelDeviceIDs(n, typ), id) || s.devices[typ+"/"+id] {
					t.Fatalf("seed %d: job %s service %s got %s device %s of %s: not the node's, or booked already", seed, j.ID, svc.Name, typ, id, n.ID)
				}
				s.devices[typ+"/"+id] = true
			}
		}
		if len(p.GPUType) != gpuServices || len(p.Devices) != gpuServices {
			t.Fatalf("seed %d: job %s has types for %d and devices for %d services, %d ask for GPUs", seed, j.ID, len(p.GPUType), len(p.Devices), gpuServices)
		}
	}
	for id, s := range sums {
		n := byNode[id]
		if s.cpu > max(0, n.Capacity.CPU-n.Used.CPU) || s.mem > max(0, n.Capacity.MemoryMiB-n.Used.MemoryMiB) {
			t.Fatalf("seed %d: node %s over-committed: %+v placed on %+v", seed, id, s, n)
		}
		for typ, c := range s.gpus {
			if c > max(0, n.Capacity.GPUs[typ]-n.Used.GPUs[typ]) {
				t.Fatalf("seed %d: node %s over-committed on %s: %d placed on %+v", seed, id, typ, c, n)
			}
		}
	}

	// Replay in scheduling order: placements come in that order, and a job
	// that waits fitted on no node when its turn came.
	free := modelNodes(nodes, modelFree)
	next := 0
	for _, j := range modelOrder(jobs) {
		if r, ok := waiting[j.ID]; ok {
			if modelFitsAnywhere(j, free) {
				t.Fatalf("seed %d: job %s waits, but fitted when its turn came", seed, j.ID)
			}
			wantKind := modelKind(j, nodes)
			if r.Kind != wantKind || !strings.Contains(r.String("q"), "queue q") {
				t.Fatalf("seed %d: job %s: reason %+v (%s), want kind %d", seed, j.ID, r, r.String("q"), wantKind)
			}
			if j.Pin.Node != "" && !strings.Contains(r.String("q"), "node pinned") {
				t.Fatalf("seed %d: job %s: reason %q does not name the node it is pinned to", seed, j.ID, r.String("q"))
			}
			continue
		}
		p := placed[next]
		next++
		if p.JobID != j.ID {
			t.Fatalf("seed %d: placement %d is job %s, want %s", seed, next-1, p.JobID, j.ID)
		}
		take(free, j, p)
	}
}

// take applies a placement to the replayed state.
func take(nodes []*modelNode, j Job, p Placement) {
	for _, n := range nodes {
		if n.id != p.NodeID {
			continue
		}
		for _, s := range j.Services {
			n.cpu -= s.CPU
			n.mem -= s.MemoryMiB
			for _, port := range s.Ports {
				n.ports[port] = true
			}
			if s.GPUs > 0 {
				t := p.GPUType[s.Name]
				n.gpus[t] -= s.GPUs
				n.devs[t] = slices.DeleteFunc(n.devs[t], func(id string) bool { return slices.Contains(p.Devices[s.Name], id) })
			}
		}
	}
}

// Schedule keeps no hidden state: goroutines sharing one read-only input
// all get the same answer (and -race sees no write to it).
func TestScheduleConcurrent(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 3))
	nodes, jobs := randomInput(rng)
	for len(nodes) < 20 || len(jobs) < 100 { // a queue with contention
		nodes, jobs = randomInput(rng)
	}
	wantPlaced, wantWaiting, err := Schedule(jobs, nodes)
	if err != nil {
		t.Fatal(err)
	}
	wantP, wantOK, wantR, err := Place(jobs[0], nodes)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 32)
	for range 32 {
		wg.Go(func() {
			placed, waiting, err := Schedule(jobs, nodes)
			if err != nil || !reflect.DeepEqual(placed, wantPlaced) || !reflect.DeepEqual(waiting, wantWaiting) {
				errs <- "Schedule differs"
			}
			p, ok, r, err := Place(jobs[0], nodes)
			if err != nil || ok != wantOK || !reflect.DeepEqual(p, wantP) || !reflect.DeepEqual(r, wantR) {
				errs <- "Place differs"
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}
