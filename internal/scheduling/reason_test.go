package scheduling

import "testing"

func TestReasonText(t *testing.T) {
	t.Parallel()
	three := []Node{
		used(node("node-1", 32, 131072, gpus{"H100": 2}), 0, 0, gpus{"H100": 1}),
		used(node("node-2", 32, 131072, gpus{"H100": 2}), 24, 0, gpus{"H100": 2}),
		used(node("node-3", 32, 131072, gpus{"A100": 4}), 30, 65536, nil),
	}
	cpuNodes := []Node{used(node("node-1", 8, 4096, nil), 6, 0, nil), used(node("node-2", 16, 4096, nil), 8, 0, nil)}
	memNodes := []Node{used(node("m1", 8, 131072, nil), 0, 98304, nil), used(node("m2", 8, 131072, nil), 0, 65536, nil)}
	full := []Node{used(node("x", 4, 1024, nil), 4, 1024, nil), used(node("y", 4, 1024, nil), 4, 1024, nil)}
	for _, tc := range []struct {
		name  string
		job   Job
		nodes []Node
		kind  ReasonKind
		want  string
	}{
		{"no nodes", job("j", svc("a", 1, 1, 2, "H100")), nil, NoNodes,
			"queue gpu has no online nodes"},
		{"GPUs busy", job("j", svc("a", 1, 1, 2, "H100")), three, Waiting,
			"waiting for 2 free H100 in queue gpu: 0 of 3 nodes have them; the most free on one node is 1 H100 (node-1)"},
		{"GPU preference list", job("j", svc("a", 1, 1, 2, "H100", "B200")), three, Waiting,
			"waiting for 2 free H100 or B200 in queue gpu: 0 of 3 nodes have them; the most free on one node is 1 H100 (node-1)"},
		{"GPUs summed over services", job("j", svc("a", 1, 1, 1, "H100"), svc("b", 1, 1, 1, "H100")), three, Waiting,
			"waiting for 2 free H100 in queue gpu: 0 of 3 nodes have them; the most free on one node is 1 H100 (node-1)"},
		{"CPUs busy", job("j", svc("a", 10, 1, 0), svc("b", 6, 1, 0)), cpuNodes, Waiting,
			"waiting for 16 CPUs in queue gpu: the largest free is 8 on node-2"},
		{"fractional CPUs", job("j", svc("a", 8.5, 1, 0)), cpuNodes, Waiting,
			"waiting for 8.5 CPUs in queue gpu: the largest free is 8 on node-2"},
		{"memory busy", job("j", svc("a", 1, 98304, 0)), memNodes, Waiting,
			"waiting for 96 GiB memory in queue gpu: the largest free is 64 GiB on m2"},
		{"memory in MiB when not whole GiB", job("j", svc("a", 1, 70000, 0)), memNodes, Waiting,
			"waiting for 70000 MiB memory in queue gpu: the largest free is 65536 MiB on m2"},
		{"everything taken", job("j", svc("a", 1, 0, 0)), full, Waiting,
			"waiting for 1 CPU in queue gpu: none is free on any of 2 nodes"},
		{"everything taken on the only node", job("j", svc("a", 0, 1, 0)), full[:1], Waiting,
			"waiting for 1 MiB memory in queue gpu: none is free on the only node"},
		{"free, but not together", job("j", svc("a", 1, 1024, 4, "A100"), svc("b", 4, 1024, 0)), three, Waiting,
			"waiting for one node with 5 CPUs, 2 GiB memory and 4 A100 free in queue gpu: each is free somewhere, but not together (only 1 of 3 nodes has the GPUs)"},
		{"more CPUs than any node", job("j", svc("a", 64, 1, 0)), three, TooLarge,
			"no online node in queue gpu is large enough: the job needs 64 CPUs, the largest node has 32 (node-1)"},
		{"more memory than any node", job("j", svc("a", 1, 1<<20, 0)), three, TooLarge,
			"no online node in queue gpu is large enough: the job needs 1024 GiB memory, the largest node has 128 GiB (node-1)"},
		{"more GPUs than any node", job("j", svc("a", 1, 1, 8, "H100")), three, TooLarge,
			"no online node in queue gpu is large enough: the job needs 8 H100, none of 3 nodes has them; the most on one node is 2 H100 (node-1)"},
		{"a GPU type no node has", job("j", svc("a", 1, 1, 1, "B200")), three, TooLarge,
			"no online node in queue gpu is large enough: the job needs 1 B200, none of 3 nodes has them"},
		{"several GPU lists", job("j", svc("a", 1, 1, 1, "H100"), svc("b", 1, 1, 2, "A100", "L4")), three, TooLarge,
			"no online node in queue gpu is large enough: the job needs 1 H100 and 2 A100 or L4, none of 3 nodes has them; the most on one node is 4 A100 (node-3)"},
		{"big enough apart, never together", job("j", svc("a", 32, 1024, 4, "A100")), []Node{node("a", 32, 1024, nil), node("b", 8, 1024, gpus{"A100": 4})}, TooLarge,
			"no online node in queue gpu is large enough: the job needs 32 CPUs, 1 GiB memory and 4 A100 on one node; each exists, but never together (only 1 of 2 nodes has the GPUs)"},
		{"unnamed nodes by ID", job("j", svc("a", 9, 1, 0)), []Node{{ID: "node_01", Capacity: Resources{CPU: 4, MemoryMiB: 8}}}, TooLarge,
			"no online node in queue gpu is large enough: the job needs 9 CPUs, the largest node has 4 (node_01)"},
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

func TestReasonFields(t *testing.T) {
	t.Parallel()
	nodes := []Node{used(node("n1", 8, 4096, gpus{"H100": 4}), 0, 0, gpus{"H100": 3}), node("n2", 8, 4096, nil)}
	_, _, r, err := Place(job("j", svc("a", 1.5, 10, 2, "H100", "A100"), svc("b", 0.25, 20, 0)), nodes)
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != Waiting || r.Short != GPU || r.Together || r.Nodes != 2 || r.Enough != 0 ||
		r.Most != 1 || r.MostType != "H100" || r.MostNode != "n1" {
		t.Fatalf("reason = %+v", r)
	}
	if r.Need.CPU != 1.75 || r.Need.MemoryMiB != 30 || len(r.Need.GPUs) != 1 || r.Need.GPUs[0].Count != 2 {
		t.Fatalf("need = %+v", r.Need)
	}
	if (Reason{}).String("q") != "" {
		t.Fatal("the zero Reason has text")
	}
}
