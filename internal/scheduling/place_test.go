package scheduling

import (
	"fmt"
	"maps"
	"math"
	"strings"
	"testing"
)

type gpus = map[string]int

func TestPlaceGPUPreference(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		nodes []Node
		job   Job
		node  string
		types map[string]string // nil: must not fit
	}{
		{"first type wins", []Node{node("n1", 8, 8192, gpus{"H100": 2, "A100": 2})},
			job("j", svc("a", 1, 1, 2, "H100", "A100")), "n1", map[string]string{"a": "H100"}},
		{"falls back when the first is busy", []Node{used(node("n1", 8, 8192, gpus{"H100": 2, "A100": 2}), 0, 0, gpus{"H100": 1})},
			job("j", svc("a", 1, 1, 2, "H100", "A100")), "n1", map[string]string{"a": "A100"}},
		{"unknown types are skipped", []Node{node("n1", 8, 8192, gpus{"H100": 2})},
			job("j", svc("a", 1, 1, 1, "B200", "H100")), "n1", map[string]string{"a": "H100"}},
		{"services share the pool", []Node{node("n1", 8, 8192, gpus{"H100": 1, "A100": 1})},
			job("j", svc("a", 1, 1, 1, "H100", "A100"), svc("b", 1, 1, 1, "H100", "A100")), "n1",
			map[string]string{"a": "H100", "b": "A100"}},
		// Greedy would give a the H100s and leave b nothing.
		{"search leaves b its only type", []Node{node("n1", 8, 8192, gpus{"H100": 2, "A100": 2})},
			job("j", svc("a", 1, 1, 2, "H100", "A100"), svc("b", 1, 1, 2, "H100")), "n1",
			map[string]string{"a": "A100", "b": "H100"}},
		{"earlier services keep their preference", []Node{node("n1", 8, 8192, gpus{"H100": 4, "A100": 4})},
			job("j", svc("a", 1, 1, 2, "H100", "A100"), svc("b", 1, 1, 2, "H100", "A100"), svc("c", 1, 1, 2, "H100", "A100")), "n1",
			map[string]string{"a": "H100", "b": "H100", "c": "A100"}},
		{"a service without GPUs gets no type", []Node{node("n1", 8, 8192, gpus{"H100": 1})},
			job("j", svc("web", 1, 1, 0), svc("gpu", 1, 1, 1, "H100")), "n1", map[string]string{"gpu": "H100"}},
		// A user listing H100 first gets H100 wherever it is free, even
		// if an A100 node would be a tighter fit.
		{"preference beats best fit", []Node{node("loose", 8, 8192, gpus{"H100": 8}), node("tight", 8, 8192, gpus{"A100": 2})},
			job("j", svc("a", 1, 1, 2, "H100", "A100")), "loose", map[string]string{"a": "H100"}},
		{"not enough of one type", []Node{node("n1", 8, 8192, gpus{"H100": 1, "A100": 1})},
			job("j", svc("a", 1, 1, 2, "H100", "A100")), "", nil},
		{"one service never spans types", []Node{node("n1", 8, 8192, gpus{"H100": 2, "A100": 2})},
			job("j", svc("a", 1, 1, 3, "H100", "A100")), "", nil},
		{"duplicate list entries are harmless", []Node{node("n1", 8, 8192, gpus{"A100": 1})},
			job("j", svc("a", 1, 1, 1, "H100", "H100", "A100")), "n1", map[string]string{"a": "A100"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, ok, why, err := Place(tc.job, tc.nodes)
			if err != nil {
				t.Fatal(err)
			}
			if tc.types == nil {
				if ok {
					t.Fatalf("placed %+v, want no fit", p)
				}
				if why.Kind == 0 {
					t.Fatal("no reason given")
				}
				return
			}
			if !ok {
				t.Fatalf("not placed: %s", why.String("q"))
			}
			if p.NodeID != tc.node || !maps.Equal(p.GPUType, tc.types) {
				t.Fatalf("got %s %v, want %s %v", p.NodeID, p.GPUType, tc.node, tc.types)
			}
		})
	}
}

func TestPlaceBestFit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		nodes []Node
		job   Job
		want  string // "" = no fit
	}{
		{"fewest chosen GPUs left", []Node{node("a", 8, 8192, gpus{"H100": 4}), node("b", 64, 65536, gpus{"H100": 2})},
			job("j", svc("s", 1, 1, 2, "H100")), "b"},
		{"counts only free GPUs", []Node{used(node("a", 8, 8192, gpus{"H100": 8}), 0, 0, gpus{"H100": 6}), node("b", 8, 8192, gpus{"H100": 4})},
			job("j", svc("s", 1, 1, 2, "H100")), "a"},
		{"CPU jobs stay off GPU nodes", []Node{node("gpu", 4, 8192, gpus{"A100": 8}), node("cpu", 16, 8192, nil)},
			job("j", svc("s", 2, 1, 0)), "cpu"},
		{"then least free CPU", []Node{node("a", 8, 8192, nil), node("b", 4, 65536, nil)},
			job("j", svc("s", 2, 1, 0)), "b"},
		{"then least free memory", []Node{node("a", 4, 8192, nil), node("b", 4, 4096, nil)},
			job("j", svc("s", 2, 1024, 0)), "b"},
		{"then node ID", []Node{node("n2", 4, 4096, nil), node("n1", 4, 4096, nil), node("n3", 4, 4096, nil)},
			job("j", svc("s", 2, 1024, 0)), "n1"},
		{"used counts against capacity", []Node{used(node("a", 16, 8192, nil), 15, 0, nil), node("b", 8, 8192, nil)},
			job("j", svc("s", 2, 1, 0)), "b"},
		{"over-used node has nothing free", []Node{used(node("a", 4, 8192, gpus{"H100": 2}), 6, 9000, gpus{"H100": 3})},
			job("j", svc("s", 0, 0, 1, "H100")), ""},
		{"sums all services", []Node{node("a", 4, 8192, nil)},
			job("j", svc("x", 2, 1, 0), svc("y", 2, 1, 0), svc("z", 0.5, 1, 0)), ""},
		{"never splits a job", []Node{node("a", 2, 8192, nil), node("b", 2, 8192, nil)},
			job("j", svc("x", 2, 1, 0), svc("y", 2, 1, 0)), ""},
		{"zero-size job fits an empty node", []Node{node("a", 0, 0, nil)}, job("j", svc("x", 0, 0, 0)), "a"},
		// 0.1+0.2 is 0.30000000000000004 in floats; millicores keep it exact.
		{"float sums are exact", []Node{node("a", 0.3, 1, nil)}, job("j", svc("x", 0.1, 0, 0), svc("y", 0.2, 0, 0)), "a"},
		{"sub-millicore requests round up", []Node{node("a", 0.001, 1, nil)}, job("j", svc("x", 0.0005, 0, 0), svc("y", 0.0005, 0, 0)), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, ok, why, err := Place(tc.job, tc.nodes)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if ok {
					t.Fatalf("placed on %s, want no fit", p.NodeID)
				}
				return
			}
			if !ok || p.NodeID != tc.want {
				t.Fatalf("got %s (ok=%v, %s), want %s", p.NodeID, ok, why.String("q"), tc.want)
			}
		})
	}
}

func TestMillicoresNeverOvercommit(t *testing.T) {
	t.Parallel()
	var tenth []Service
	for i := range 11 {
		tenth = append(tenth, svc(string(rune('a'+i)), 0.1, 0, 0))
	}
	nodes := []Node{node("n", 1, 0, nil)}
	if _, ok, _, _ := Place(job("ten", tenth[:10]...), nodes); !ok {
		t.Fatal("ten 0.1-CPU services do not fit on 1 CPU")
	}
	if _, ok, _, _ := Place(job("eleven", tenth...), nodes); ok {
		t.Fatal("eleven 0.1-CPU services fit on 1 CPU")
	}
}

func TestValidation(t *testing.T) {
	t.Parallel()
	ok := node("n1", 8, 8192, gpus{"H100": 1})
	for _, tc := range []struct {
		name  string
		job   Job
		nodes []Node
		want  string
	}{
		{"job without ID", job("", svc("a", 1, 1, 0)), nil, "without an ID"},
		{"no services", job("j"), nil, "no services"},
		{"unnamed service", job("j", svc("", 1, 1, 0)), nil, "has no name"},
		{"duplicate service", job("j", svc("a", 1, 1, 0), svc("a", 1, 1, 0)), nil, `"a" appears twice`},
		{"negative CPU", job("j", svc("a", -1, 1, 0)), nil, "cpu -1"},
		{"NaN CPU", job("j", svc("a", math.NaN(), 1, 0)), nil, "cpu NaN"},
		{"infinite CPU", job("j", svc("a", math.Inf(1), 1, 0)), nil, "cpu +Inf"},
		{"negative memory", job("j", svc("a", 1, -1, 0)), nil, "memory -1"},
		{"negative GPUs", job("j", svc("a", 1, 1, -1, "H100")), nil, "gpus -1"},
		{"GPUs without type", job("j", svc("a", 1, 1, 2)), nil, "without a GPU type"},
		{"empty GPU type", job("j", svc("a", 1, 1, 1, "")), nil, "empty GPU type"},
		{"node without ID", job("j", svc("a", 1, 1, 0)), []Node{{Name: "x"}}, `node "x" without an ID`},
		{"negative capacity", job("j", svc("a", 1, 1, 0)), []Node{node("n2", -4, 1, nil)}, `node "n2": capacity: cpu -4`},
		{"negative used GPUs", job("j", svc("a", 1, 1, 0)), []Node{used(ok, 0, 0, gpus{"H100": -1})}, `node "n1": used: H100: gpus -1`},
		{"empty GPU type on node", job("j", svc("a", 1, 1, 0)), []Node{node("n3", 1, 1, gpus{"": 1})}, "empty type"},
		{"duplicate node", job("j", svc("a", 1, 1, 0)), []Node{ok, ok}, `node "n1" appears twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, placed, _, err := Place(tc.job, tc.nodes)
			if err == nil || placed || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, placed = %v; want an error containing %q", err, placed, tc.want)
			}
			if _, _, err := Schedule([]Job{tc.job}, tc.nodes); err == nil {
				t.Fatal("Schedule accepted what Place refused")
			}
		})
	}
}

// Packing puzzles: the quick checks pass, so only the search decides.
func TestPlaceGPUPuzzles(t *testing.T) {
	t.Parallel()
	puzzle := func(services, count int, types ...string) Job {
		j := job("j")
		for i := range services {
			j.Services = append(j.Services, svc(fmt.Sprintf("s%02d", i), 0, 0, count, types...))
		}
		return j
	}
	// 30 services of 3 GPUs: 45+45 holds them, 44+47 does not.
	p, ok, _, err := Place(puzzle(30, 3, "A", "B"), []Node{node("n", 1, 1, gpus{"A": 45, "B": 45})})
	if err != nil || !ok || p.GPUType["s14"] != "A" || p.GPUType["s15"] != "B" {
		t.Fatalf("feasible puzzle: %v %v %v", p, ok, err)
	}
	if _, ok, _, err := Place(puzzle(30, 3, "A", "B"), []Node{node("n", 1, 1, gpus{"A": 44, "B": 47})}); err != nil || ok {
		t.Fatalf("infeasible puzzle placed: %v %v", ok, err)
	}
	// A hostile job: parity makes it infeasible on every node, and the
	// state space is too large to explore; budgets end the search.
	types := []string{"T0", "T1", "T2", "T3", "T4", "T5", "T6", "T7", "T8", "T9"}
	capacity := gpus{}
	for _, ty := range types {
		capacity[ty] = 13
	}
	var nodes []Node
	for i := range 200 {
		nodes = append(nodes, node(fmt.Sprintf("n%03d", i), 1, 1, capacity))
	}
	_, ok, r, err := Place(puzzle(64, 2, types...), nodes)
	if err != nil || ok || r.Kind == 0 {
		t.Fatalf("hostile puzzle: %v %+v %v", ok, r, err)
	}
}
