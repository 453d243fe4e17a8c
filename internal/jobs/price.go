package jobs

import (
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/jobspec"
)

// Usage is what spec holds while running. Before placement a service's GPU
// type is not known, so it is priced at the dearest type of its preference
// list: an estimate may be high, never low.
func Usage(spec jobspec.Job, r billing.Rates) billing.Usage {
	var u billing.Usage
	for _, s := range spec.Services {
		u.CPUs += s.CPU
		u.MemoryMiB += s.MemoryMiB
		if s.GPUs == 0 || len(s.GPUTypes) == 0 {
			continue
		}
		dearest, best := s.GPUTypes[0], billing.Tokens(-1)
		for _, t := range s.GPUTypes {
			if p, ok := r.GPURateFor(t); ok && p > best {
				dearest, best = t, p
			}
		}
		u.GPUs = append(u.GPUs, billing.GPUUse{Type: dearest, Count: s.GPUs})
	}
	return u
}
