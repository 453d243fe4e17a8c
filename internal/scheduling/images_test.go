package scheduling

import (
	"testing"
)

const bp = "levers9-bp/tn_1:abc"

func holding(n Node, images ...string) Node { n.Images = images; return n }

func imaged(s Service, img string) Service { s.Image = img; return s }

// Placement prefers nodes holding the job's images: after GPU preference,
// before best fit, and never on a node without room.
func TestPlaceHeldImages(t *testing.T) {
	t.Parallel()
	web := func(img string) Service { return imaged(svc("web", 1, 1024, 0), img) }
	for _, tc := range []struct {
		name  string
		nodes []Node
		job   Job
		want  string // "" = no fit
	}{
		{"of two equal nodes the one holding the image wins",
			[]Node{containers(node("n1", 8, 8192, nil)), holding(containers(node("n2", 8, 8192, nil)), bp)},
			job("j", web(bp)), "n2"},
		{"without it the lower ID wins",
			[]Node{containers(node("n1", 8, 8192, nil)), holding(containers(node("n2", 8, 8192, nil)), "levers9-bp/tn_1:other")},
			job("j", web(bp)), "n1"},
		{"holding beats a tighter fit",
			[]Node{containers(node("tight", 2, 2048, nil)), holding(containers(node("loose", 64, 65536, nil)), bp)},
			job("j", web(bp)), "loose"},
		{"holding beats keeping GPU nodes for GPU jobs",
			[]Node{containers(node("cpu", 8, 8192, nil)), holding(containers(node("gpu", 8, 8192, gpus{"H100": 8})), bp)},
			job("j", web(bp)), "gpu"},
		{"a held image never beats a preferred GPU type",
			[]Node{containers(node("h100", 8, 8192, gpus{"H100": 2})), holding(containers(node("a100", 8, 8192, gpus{"A100": 2})), bp)},
			job("j", imaged(svc("train", 1, 1, 1, "H100", "A100"), bp)), "h100"},
		{"among equally preferred types it decides",
			[]Node{containers(node("a", 8, 8192, gpus{"H100": 2})), holding(containers(node("b", 8, 8192, gpus{"H100": 8})), bp)},
			job("j", imaged(svc("train", 1, 1, 1, "H100"), bp)), "b"},
		{"a node holding the image but without room is not chosen",
			[]Node{containers(node("n1", 8, 8192, nil)), holding(containers(node("n2", 0.5, 8192, nil)), bp)},
			job("j", web(bp)), "n1"},
		{"nor one that runs no containers",
			[]Node{containers(node("n1", 8, 8192, nil)), holding(node("n2", 8, 8192, nil), bp)},
			job("j", web(bp)), "n1"},
		{"nor one the job is not pinned to",
			[]Node{containers(node("n1", 8, 8192, nil)), holding(containers(node("n2", 8, 8192, nil)), bp)},
			pinned(job("j", web(bp)), "n1"), "n1"},
		{"more services' images held wins",
			[]Node{holding(containers(node("one", 8, 8192, nil)), bp), holding(containers(node("two", 64, 65536, nil)), bp, "python:3.12")},
			job("j", web(bp), imaged(svc("side", 1, 1, 0), "python:3.12")), "two"},
		{"services sharing an image count each",
			[]Node{holding(containers(node("a", 8, 8192, nil)), "python:3.12", "redis"), holding(containers(node("b", 64, 65536, nil)), bp)},
			job("j", web(bp), imaged(svc("side", 1, 1, 0), bp), imaged(svc("cache", 1, 1, 0), "redis")), "b"},
		{"repeats in Images count once",
			[]Node{holding(containers(node("a", 8, 8192, nil)), bp, bp, bp), holding(containers(node("b", 8, 8192, nil)), "redis", bp)},
			job("j", web(bp), imaged(svc("cache", 1, 1, 0), "redis")), "b"},
		{"command-only services hold nothing",
			[]Node{node("n1", 8, 8192, nil), holding(node("n2", 8, 8192, nil), "")},
			job("j", svc("cmd", 1, 1, 0)), "n1"},
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
			// Schedule agrees, and the model too.
			placed, _, err := Schedule([]Job{tc.job}, tc.nodes)
			if err != nil || len(placed) != 1 || placed[0].NodeID != tc.want {
				t.Fatalf("Schedule: %+v %v", placed, err)
			}
			if m, ok := modelPlace(tc.job, modelNodes(tc.nodes, modelFree)); !ok || m.NodeID != tc.want {
				t.Fatalf("model: %+v %v", m, ok)
			}
		})
	}
}

// Once the node holding the image is full, the next job goes elsewhere:
// holding comes after room, in a whole pass too.
func TestScheduleHeldImagesFillUp(t *testing.T) {
	t.Parallel()
	nodes := []Node{containers(node("n1", 2, 8192, nil)), holding(containers(node("n2", 2, 8192, nil)), bp)}
	jobs := []Job{
		withPriority(job("first", imaged(svc("s", 2, 1, 0), bp)), 0, 0),
		withPriority(job("second", imaged(svc("s", 2, 1, 0), bp)), 0, 1),
	}
	placed, waiting, err := Schedule(jobs, nodes)
	if err != nil || len(waiting) != 0 || len(placed) != 2 {
		t.Fatalf("%+v %v %v", placed, waiting, err)
	}
	if placed[0].NodeID != "n2" || placed[1].NodeID != "n1" {
		t.Fatalf("first on %s, second on %s; want n2 then n1", placed[0].NodeID, placed[1].NodeID)
	}
}

// Images are a hint, never a reason to refuse a node.
func TestValidateNodeImages(t *testing.T) {
	t.Parallel()
	n := holding(containers(node("n1", 1, 1, nil)), "", bp, bp, "busybox")
	if err := ValidateNode(n); err != nil {
		t.Fatal(err)
	}
}
