// Package metering turns run time and stored bytes into charges on the
// ledger, exactly once each: every charge has an idempotency key that the
// database keeps unique, so a retried, restarted or duplicated meter never
// charges twice and always catches up.
package metering

import (
	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/billing"
)

// usage is what the services of a running job hold, with the GPU types
// they were placed with (before placement: the first of their preferences).
func usage(services []*ent.Service) billing.Usage {
	var u billing.Usage
	for _, s := range services {
		u.CPUs += s.CPU
		u.MemoryMiB += s.MemoryMib
		if s.Gpus == 0 {
			continue
		}
		t := s.GpuType
		if t == "" && len(s.GpuTypes) > 0 {
			t = s.GpuTypes[0]
		}
		u.GPUs = append(u.GPUs, billing.GPUUse{Type: t, Count: s.Gpus})
	}
	return u
}
