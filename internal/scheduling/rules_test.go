package scheduling

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func withDevices(n Node, typ string, ids ...string) Node {
	n.Devices = maps.Clone(n.Devices)
	if n.Devices == nil {
		n.Devices = map[string][]string{}
	}
	n.Devices[typ] = ids
	return n
}

func booked(n Node, typ string, ids ...string) Node {
	n.Booked = map[string][]string{typ: ids}
	return n
}

func image(s Service) Service { s.Image = "python:3.12"; return s }

func venv(s Service) Service { s.Venv = true; return s }

func withPorts(s Service, ports ...int) Service { s.Ports = ports; return s }

func pinned(j Job, node string) Job {
	j.Pin = Pin{Node: node, Name: node, Why: "bucket results is on its disk"}
	return j
}

func containers(n Node) Node { n.Containers = true; return n }

// Two 1-GPU jobs on a 2-GPU node get different devices, the lowest first
// in inventory order; a third waits, and says so.
func TestScheduleBooksDevices(t *testing.T) {
	t.Parallel()
	n := withDevices(node("n1", 8, 8192, gpus{"H100": 2}), "H100", "GPU-b", "GPU-a")
	jobs := []Job{
		withPriority(job("first", svc("s", 1, 1, 1, "H100")), 0, 0),
		withPriority(job("second", svc("s", 1, 1, 1, "H100")), 0, 1),
		withPriority(job("third", svc("s", 1, 1, 1, "H100")), 0, 2),
	}
	placed, waiting, err := Schedule(jobs, []Node{n})
	if err != nil {
		t.Fatal(err)
	}
	if len(placed) != 2 || !slices.Equal(placed[0].Devices["s"], []string{"GPU-b"}) || !slices.Equal(placed[1].Devices["s"], []string{"GPU-a"}) {
		t.Fatalf("placed %+v", placed)
	}
	want := "waiting for 1 free H100 in queue gpu: 0 of 1 node has them"
	if got := waiting["third"].String("gpu"); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestPlaceDevices(t *testing.T) {
	t.Parallel()
	four := node("n1", 8, 8192, gpus{"H100": 4})
	for _, tc := range []struct {
		name string
		node Node
		job  Job
		want map[string][]string // nil: must not fit
	}{
		{"numbered when not listed", four, job("j", svc("a", 1, 1, 2, "H100")), map[string][]string{"a": {"0", "1"}}},
		{"services in order", four, job("j", svc("a", 1, 1, 1, "H100"), svc("web", 1, 1, 0), svc("b", 1, 1, 2, "H100")),
			map[string][]string{"a": {"0"}, "b": {"1", "2"}}},
		{"around booked ones", used(booked(four, "H100", "1", "2"), 0, 0, gpus{"H100": 2}), job("j", svc("a", 1, 1, 2, "H100")),
			map[string][]string{"a": {"0", "3"}}},
		{"not more than are free", used(booked(four, "H100", "1", "2"), 0, 0, gpus{"H100": 2}), job("j", svc("a", 1, 1, 3, "H100")), nil},
		{"the free ones", used(booked(four, "H100", "0", "2"), 0, 0, gpus{"H100": 2}), job("j", svc("a", 1, 1, 2, "H100")),
			map[string][]string{"a": {"1", "3"}}},
		// Booked before devices were: counted, not known; the rest are booked
		// from the lowest free device up.
		{"legacy services count", used(booked(four, "H100", "3"), 0, 0, gpus{"H100": 3}), job("j", svc("a", 1, 1, 1, "H100")),
			map[string][]string{"a": {"0"}}},
		{"legacy services leave too few", used(four, 0, 0, gpus{"H100": 3}), job("j", svc("a", 1, 1, 2, "H100")), nil},
		// Used lagging behind what is booked never hands out a device twice.
		{"booked beyond Used", booked(four, "H100", "0", "1", "2"), job("j", svc("a", 1, 1, 2, "H100")), nil},
		{"a booked device the node lost", used(booked(four, "H100", "GPU-gone"), 0, 0, gpus{"H100": 1}), job("j", svc("a", 1, 1, 3, "H100")),
			map[string][]string{"a": {"0", "1", "2"}}},
		{"listed IDs", withDevices(four, "H100", "GPU-d", "GPU-c", "GPU-b", "GPU-a"), job("j", svc("a", 1, 1, 3, "H100")),
			map[string][]string{"a": {"GPU-d", "GPU-c", "GPU-b"}}},
		{"types book apart", withDevices(node("n1", 8, 8192, gpus{"H100": 1, "A100": 1}), "A100", "GPU-x"),
			job("j", svc("a", 1, 1, 1, "H100"), svc("b", 1, 1, 1, "A100")), map[string][]string{"a": {"0"}, "b": {"GPU-x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, ok, r, err := Place(tc.job, []Node{tc.node})
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if ok || r.Kind != Waiting {
					t.Fatalf("placed %+v (reason %+v), want waiting", p, r)
				}
				return
			}
			if !ok || !reflect.DeepEqual(p.Devices, tc.want) {
				t.Fatalf("devices %v (placed %v: %s), want %v", p.Devices, ok, r.String("q"), tc.want)
			}
		})
	}
}

func TestPlaceRuntimePortsPins(t *testing.T) {
	t.Parallel()
	proc, dock := node("proc", 8, 8192, nil), containers(node("dock", 16, 8192, nil))
	for _, tc := range []struct {
		name  string
		nodes []Node
		job   Job
		want  string // node, or "" for no fit
	}{
		{"images only on container nodes", []Node{proc, dock}, job("j", image(svc("a", 1, 1, 0))), "dock"},
		{"one image service is enough", []Node{proc, dock}, job("j", svc("a", 1, 1, 0), image(svc("b", 1, 1, 0))), "dock"},
		{"commands run anywhere", []Node{proc, dock}, job("j", svc("a", 1, 1, 0)), "proc"},
		{"commands on a container node", []Node{dock}, job("j", svc("a", 1, 1, 0)), "dock"},
		{"no container node", []Node{proc}, job("j", image(svc("a", 1, 1, 0))), ""},
		{"a venv runs without containers", []Node{proc}, job("j", venv(image(svc("a", 1, 1, 0)))), "proc"},
		{"a venv fits best on the process node", []Node{proc, dock}, job("j", venv(image(svc("a", 1, 1, 0)))), "proc"},
		{"a venv and an image service need containers", []Node{proc}, job("j", venv(image(svc("a", 1, 1, 0))), image(svc("b", 1, 1, 0))), ""},
		{"a venv and an image service on the container node", []Node{proc, dock}, job("j", venv(image(svc("a", 1, 1, 0))), image(svc("b", 1, 1, 0))), "dock"},
		{"port held on the best fit", []Node{{ID: "proc", Capacity: proc.Capacity, Ports: []int{8888}}, dock},
			job("j", withPorts(svc("a", 1, 1, 0), 8888)), "dock"},
		{"other ports do not matter", []Node{{ID: "proc", Capacity: proc.Capacity, Ports: []int{8000}}, dock},
			job("j", withPorts(svc("a", 1, 1, 0), 8888)), "proc"},
		{"port held everywhere", []Node{{ID: "proc", Capacity: proc.Capacity, Ports: []int{8888}}},
			job("j", withPorts(svc("a", 1, 1, 0), 8001, 8888)), ""},
		{"pinned beats best fit", []Node{proc, dock}, pinned(job("j", svc("a", 1, 1, 0)), "dock"), "dock"},
		{"pinned node too small", []Node{proc, dock}, pinned(job("j", svc("a", 12, 1, 0)), "proc"), ""},
		{"pinned node not in the queue", []Node{proc, dock}, pinned(job("j", svc("a", 1, 1, 0)), "elsewhere"), ""},
		{"pinned node runs no images", []Node{proc, dock}, pinned(job("j", image(svc("a", 1, 1, 0))), "proc"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, ok, r, err := Place(tc.job, tc.nodes)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if ok || r.Kind == 0 {
					t.Fatalf("placed on %s, want no fit", p.NodeID)
				}
				return
			}
			if !ok || p.NodeID != tc.want {
				t.Fatalf("got %s (ok=%v, %s), want %s", p.NodeID, ok, r.String("q"), tc.want)
			}
		})
	}
}

// Ports and devices a placed job takes are gone for the next job of the
// pass.
func TestScheduleBooksPorts(t *testing.T) {
	t.Parallel()
	nodes := []Node{node("a", 8, 8192, nil), node("b", 8, 8192, nil)}
	web := func(id string) Job { return job(id, withPorts(svc("web", 1, 1, 0), 8888)) }
	placed, waiting, err := Schedule([]Job{web("j1"), web("j2"), web("j3")}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if len(placed) != 2 || placed[0].NodeID == placed[1].NodeID {
		t.Fatalf("placed %+v", placed)
	}
	want := "waiting for port 8888 in queue web: 0 of 2 nodes have it free"
	if got := waiting["j3"].String("web"); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestRulesReasonText(t *testing.T) {
	t.Parallel()
	proc := node("proc-1", 8, 8192, nil)
	dock := containers(node("dock-1", 8, 8192, gpus{"H100": 1}))
	held := Node{ID: "n1", Name: "n1", Capacity: proc.Capacity, Ports: []int{8000, 8888}}
	for _, tc := range []struct {
		name  string
		job   Job
		nodes []Node
		kind  ReasonKind
		want  string
	}{
		{"no container nodes", job("j", image(svc("a", 1, 1, 0))), []Node{proc, node("proc-2", 8, 8192, nil), node("proc-3", 8, 8192, nil)}, NoContainers,
			"waiting for a node that runs containers in queue gpu: 0 of 3 nodes run images (docker)"},
		{"pinned to a process node", pinned(job("j", image(svc("a", 1, 1, 0))), "proc-1"), []Node{proc, dock}, NoContainers,
			"waiting for a node that runs containers in queue gpu: 0 of 1 node runs images (docker); the job may run on node proc-1 only: bucket results is on its disk"},
		{"process nodes not counted", job("j", image(svc("a", 1, 1, 1, "H100"))), []Node{proc, used(dock, 0, 0, gpus{"H100": 1})}, Waiting,
			"waiting for 1 free H100 in queue gpu: 0 of 1 node has them (not counting 1 node that runs no images)"},
		{"pinned node away", pinned(job("j", svc("a", 1, 1, 0)), "gpu-a"), []Node{proc}, PinnedAway,
			"waiting for node gpu-a to be online in queue gpu: bucket results is on its disk"},
		{"pinned node away, no why", Job{ID: "j", Services: []Service{svc("a", 1, 1, 0)}, Pin: Pin{Node: "node_9"}}, []Node{proc}, PinnedAway,
			"waiting for node node_9, the only node the job may run on, to be online in queue gpu"},
		{"pinned node busy", pinned(job("j", svc("a", 4, 1, 0)), "proc-1"), []Node{used(proc, 6, 0, nil), node("idle", 64, 8192, nil)}, Waiting,
			"waiting for 4 CPUs in queue gpu: the largest free is 2 on proc-1; the job may run on node proc-1 only: bucket results is on its disk"},
		{"pinned node too small", pinned(job("j", svc("a", 16, 1, 0)), "proc-1"), []Node{proc, node("big", 64, 8192, nil)}, TooLarge,
			"no online node in queue gpu is large enough: the job needs 16 CPUs, the largest node has 8 (proc-1); the job may run on node proc-1 only: bucket results is on its disk"},
		{"port held", job("j", withPorts(svc("a", 1, 1, 0), 8888)), []Node{held}, Waiting,
			"waiting for port 8888 in queue gpu: 0 of 1 node has it free"},
		{"only the held ports are named", job("j", withPorts(svc("a", 1, 1, 0), 8888, 9000), withPorts(svc("b", 1, 1, 0), 8000)), []Node{held, held2()}, Waiting,
			"waiting for ports 8000 and 8888 in queue gpu: 0 of 2 nodes have them free"},
		{"ports free, but not with the CPUs", job("j", withPorts(svc("a", 6, 1024, 0), 8888)), []Node{used(proc, 4, 0, nil), used(node("n2", 8, 8192, nil), 4, 0, nil), {ID: "n3", Capacity: proc.Capacity, Ports: []int{8888}}}, Waiting,
			"waiting for one node with 6 CPUs, 1 GiB memory and port 8888 free in queue gpu: each is free somewhere, but not together (only 1 of 3 nodes has the CPUs)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, ok, r, err := Place(tc.job, tc.nodes)
			if err != nil || ok {
				t.Fatalf("placed = %v on %s, err = %v; want a reason", ok, p.NodeID, err)
			}
			if r.Kind != tc.kind {
				t.Errorf("kind = %d, want %d", r.Kind, tc.kind)
			}
			if got := r.String("gpu"); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func held2() Node {
	return Node{ID: "n2", Name: "n2", Capacity: Resources{CPU: 8, MemoryMiB: 8192}, Ports: []int{8000}}
}

func TestRulesValidation(t *testing.T) {
	t.Parallel()
	ok := node("n1", 8, 8192, gpus{"H100": 2})
	for _, tc := range []struct {
		name  string
		job   Job
		nodes []Node
		want  string
	}{
		{"port twice in a job", job("j", withPorts(svc("a", 1, 1, 0), 8888), withPorts(svc("b", 1, 1, 0), 8888)), nil,
			`port 8888 is declared by services "a" and "b"`},
		{"port twice in a service", job("j", withPorts(svc("a", 1, 1, 0), 80, 80)), nil, `service "a": port 80 is declared twice`},
		{"port zero", job("j", withPorts(svc("a", 1, 1, 0), 0)), nil, "port 0 is not between"},
		{"port too large", job("j", withPorts(svc("a", 1, 1, 0), 65536)), nil, "port 65536 is not between"},
		{"devices fewer than GPUs", job("j", svc("a", 1, 1, 0)), []Node{withDevices(ok, "H100", "GPU-a")}, "1 H100 devices listed for 2 GPUs"},
		{"devices repeated", job("j", svc("a", 1, 1, 0)), []Node{withDevices(ok, "H100", "GPU-a", "GPU-a")}, `device ID "GPU-a" is empty or repeated`},
		{"devices of a type the node lacks", job("j", svc("a", 1, 1, 0)), []Node{withDevices(ok, "A100", "GPU-a")}, "1 A100 devices listed for 0 GPUs"},
		{"node port out of range", job("j", svc("a", 1, 1, 0)), []Node{{ID: "n", Ports: []int{-1}}}, "port -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, placed, _, err := Place(tc.job, tc.nodes)
			if err == nil || placed || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, placed = %v; want an error containing %q", err, placed, tc.want)
			}
		})
	}
}
