package scheduling

import (
	"fmt"
	"reflect"
	"testing"
)

// fuzzBytes hands out fuzz input as small numbers, zero once it runs out.
type fuzzBytes struct {
	b []byte
	i int
}

func (f *fuzzBytes) next() int {
	if f.i >= len(f.b) {
		return 0
	}
	f.i++
	return int(f.b[f.i-1])
}

// signed is -128..127, so inputs include the negative ones Place refuses.
func (f *fuzzBytes) signed() int { return int(int8(f.next())) }

var fuzzTypes = []string{"H100", "A100", "L4", "B200"}

var fuzzImages = []string{"busybox", "levers9-bp/t:a", "levers9-bp/t:b"}

// fuzzInput builds up to 5 nodes and one job from bytes and says whether
// Place must refuse them. CPU comes in eighths so the model's float sums
// are exact; ports come from a few, so they collide (and repeat, which is
// invalid within a job).
func fuzzInput(data []byte) (Job, []Node, bool) {
	f := &fuzzBytes{b: data}
	invalid := false
	amount := func(v int) int {
		invalid = invalid || v < 0
		return v
	}
	resources := func() Resources {
		r := Resources{CPU: float64(amount(f.signed())) / 8, MemoryMiB: int64(amount(f.signed())) * 64}
		mask := f.next()
		for i, t := range fuzzTypes[:3] {
			if mask&(1<<i) != 0 {
				if r.GPUs == nil {
					r.GPUs = map[string]int{}
				}
				r.GPUs[t] = amount(f.signed() % 16)
			}
		}
		return r
	}
	ports := []int{80, 8888, 0, 70000} // 0 and 70000 are out of range
	nodes := make([]Node, f.next()%6)
	for i := range nodes {
		nodes[i] = Node{ID: fmt.Sprintf("n%d", (i*7)%len(nodes)), Name: fmt.Sprintf("node-%d", i)}
		nodes[i].Capacity = resources()
		if f.next()%2 == 0 {
			nodes[i].Used = resources()
		}
		flags := f.next()
		nodes[i].Containers = flags&1 != 0
		if flags&2 != 0 {
			nodes[i].Ports = []int{ports[f.next()%2]}
		}
		if flags&8 != 0 {
			// Images held, from a mask over fuzzImages (repeats allowed).
			mask := f.next()
			for k, img := range fuzzImages {
				if mask&(1<<k) != 0 {
					nodes[i].Images = append(nodes[i].Images, img)
				}
			}
			if mask&(1<<len(fuzzImages)) != 0 {
				nodes[i].Images = append(nodes[i].Images, nodes[i].Images...)
			}
		}
		if flags&4 != 0 {
			// Books the lowest numbered device of each type, and one the
			// node does not have.
			nodes[i].Booked = map[string][]string{}
			for t := range nodes[i].Capacity.GPUs {
				nodes[i].Booked[t] = []string{"0", "GPU-gone"}
			}
		}
	}
	j := Job{ID: "j"}
	seen := map[int]bool{}
	for k := range f.next() % 5 {
		s := Service{Name: fmt.Sprintf("s%d", k), CPU: float64(amount(f.signed())) / 8, MemoryMiB: int64(amount(f.signed())) * 32, GPUs: amount(f.signed() % 5)}
		for range f.next() % 4 {
			s.GPUTypes = append(s.GPUTypes, fuzzTypes[f.next()%len(fuzzTypes)])
		}
		flags := f.next()
		if flags&1 != 0 {
			s.Image = fuzzImages[(flags>>2)%len(fuzzImages)]
			s.Venv = flags&(1<<6) != 0
		}
		if flags&2 != 0 {
			p := ports[f.next()%len(ports)]
			invalid = invalid || p < 1 || p > 65535 || seen[p]
			seen[p] = true
			s.Ports = append(s.Ports, p)
		}
		invalid = invalid || (s.GPUs > 0 && len(s.GPUTypes) == 0)
		j.Services = append(j.Services, s)
	}
	if pin := f.next(); pin%4 == 1 {
		j.Pin = Pin{Node: fmt.Sprintf("n%d", pin%7), Why: "bucket b is on its disk"}
	}
	invalid = invalid || len(j.Services) == 0
	return j, nodes, invalid
}

// FuzzPlace checks Place against its contract and the brute-force model:
// refuses exactly the impossible inputs, never over-commits, picks what the
// policy picks, and explains every refusal.
func FuzzPlace(f *testing.F) {
	f.Add([]byte{3, 32, 64, 7, 8, 8, 8, 1, 2, 16, 16, 16, 0, 5, 1, 2, 2, 3, 0, 1, 2, 4, 8, 4, 2, 1, 1})
	f.Add([]byte{1, 64, 64, 1, 4, 1, 1, 2, 8, 8, 2, 2, 1, 2})
	f.Add([]byte{0, 1, 1, 1, 1, 1, 1, 1})
	f.Add([]byte{2, 0xff, 1, 0, 1, 1, 4, 1})
	// Two equal nodes, the second holding the job's image.
	f.Add([]byte{2, 16, 16, 0, 1, 1, 16, 16, 0, 1, 9, 2, 1, 8, 8, 0, 0, 5, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		job, nodes, invalid := fuzzInput(data)
		p, ok, r, err := Place(job, nodes)
		if (err != nil) != invalid {
			t.Fatalf("err = %v, input invalid = %v: %+v on %+v", err, invalid, job, nodes)
		}
		if err != nil {
			if ok || !reflect.DeepEqual(p, Placement{}) {
				t.Fatal("placed despite an error")
			}
			return
		}
		want, wantOK := modelPlace(job, modelNodes(nodes, modelFree))
		if ok != wantOK || !reflect.DeepEqual(p, want) {
			t.Fatalf("Place = %+v %v, model = %+v %v for %+v on %+v", p, ok, want, wantOK, job, nodes)
		}
		if ok {
			if r.Kind != 0 {
				t.Fatalf("placed with reason %+v", r)
			}
			return
		}
		if r.Kind != modelKind(job, nodes) || r.Nodes > len(nodes) || r.String("q") == "" {
			t.Fatalf("reason %+v (%q), want kind %d", r, r.String("q"), modelKind(job, nodes))
		}
	})
}
