package jobspec

import "testing"

func TestSmallestRequest(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		services []Service
		cpu      float64
		mem      int64
	}{
		{"none", nil, 0, 0},
		{"one", []Service{{CPU: 2, MemoryMiB: 512}}, 2, 512},
		{"each its own least", []Service{{CPU: 2, MemoryMiB: 64}, {CPU: 0.5, MemoryMiB: 4096}}, 0.5, 64},
		{"a zero counts", []Service{{CPU: 1, MemoryMiB: 64}, {CPU: 0, MemoryMiB: 128}}, 0, 64},
	} {
		cpu, mem := Job{Services: c.services}.SmallestRequest()
		if cpu != c.cpu || mem != c.mem {
			t.Errorf("%s: %v CPU, %d MiB; want %v, %d", c.name, cpu, mem, c.cpu, c.mem)
		}
	}
}
