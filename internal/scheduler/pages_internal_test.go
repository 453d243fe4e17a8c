package scheduler

import (
	"testing"

	"github.com/levers9/levers9/internal/scheduling"
)

// smallestLoaded bounds the queue's smallest request from below with the
// page's own services, CPU and memory each on its own, so reading on
// because a node has room for it never skips a job that would fit.
func TestSmallestLoaded(t *testing.T) {
	t.Parallel()
	svc := func(cpu float64, mem int64) scheduling.Service {
		return scheduling.Service{Name: "s", CPU: cpu, MemoryMiB: mem}
	}
	tests := []struct {
		name string
		jobs []scheduling.Job
		want request
		ok   bool
	}{
		{name: "no jobs", ok: false},
		{name: "a job without services", jobs: []scheduling.Job{{ID: "j1"}}, ok: false},
		{name: "one service", jobs: []scheduling.Job{{ID: "j1", Services: []scheduling.Service{svc(2, 512)}}}, want: request{2, 512}, ok: true},
		{
			name: "minimum of each across services and jobs",
			jobs: []scheduling.Job{
				{ID: "j1", Services: []scheduling.Service{svc(4, 128), svc(0.5, 4096)}},
				{ID: "j2", Services: []scheduling.Service{svc(1, 1024)}},
			},
			want: request{0.5, 128}, ok: true,
		},
		{name: "zero requests count", jobs: []scheduling.Job{{ID: "j1", Services: []scheduling.Service{svc(0, 0), svc(1, 1)}}}, want: request{0, 0}, ok: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := newState()
			st.jobs = tc.jobs
			got, ok := st.smallestLoaded()
			if ok != tc.ok || (ok && got != tc.want) {
				t.Fatalf("smallestLoaded() = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// room is true when one node has both the CPU and the memory free (CPU
// with a millicore of slack against rounding), never when they are free
// only on different nodes.
func TestRoom(t *testing.T) {
	t.Parallel()
	node := func(capCPU, usedCPU float64, capMem, usedMem int64) scheduling.Node {
		return scheduling.Node{Capacity: scheduling.Resources{CPU: capCPU, MemoryMiB: capMem}, Used: scheduling.Resources{CPU: usedCPU, MemoryMiB: usedMem}}
	}
	tenth, fifth := 0.1, 0.2 // variables: constants would add exactly
	tests := []struct {
		name  string
		nodes []scheduling.Node
		r     request
		want  bool
	}{
		{name: "no nodes", r: request{0, 0}, want: false},
		{name: "exactly free", nodes: []scheduling.Node{node(4, 3, 1024, 512)}, r: request{1, 512}, want: true},
		{name: "rounding slack", nodes: []scheduling.Node{node(0.4, tenth+fifth, 1024, 0)}, r: request{0.1, 1}, want: true}, // 0.4-(0.1+0.2) < 0.1 in floats
		{name: "CPU short", nodes: []scheduling.Node{node(4, 3.5, 1024, 0)}, r: request{1, 1}, want: false},
		{name: "memory short", nodes: []scheduling.Node{node(4, 0, 1024, 1000)}, r: request{1, 25}, want: false},
		{name: "split across nodes", nodes: []scheduling.Node{node(4, 0, 1024, 1024), node(4, 4, 1024, 0)}, r: request{1, 1}, want: false},
		{name: "second node fits", nodes: []scheduling.Node{node(4, 4, 1024, 0), node(8, 2, 2048, 100)}, r: request{6, 1948}, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := newState()
			st.nodes = tc.nodes
			if got := st.room(tc.r); got != tc.want {
				t.Fatalf("room(%+v) = %v, want %v", tc.r, got, tc.want)
			}
		})
	}
}
