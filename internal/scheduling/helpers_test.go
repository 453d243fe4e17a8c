package scheduling

import (
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func node(id string, cpu float64, memMiB int64, gpus map[string]int) Node {
	return Node{ID: id, Name: id, Capacity: Resources{CPU: cpu, MemoryMiB: memMiB, GPUs: gpus}}
}

func used(n Node, cpu float64, memMiB int64, gpus map[string]int) Node {
	n.Used = Resources{CPU: cpu, MemoryMiB: memMiB, GPUs: gpus}
	return n
}

func svc(name string, cpu float64, memMiB int64, gpus int, types ...string) Service {
	return Service{Name: name, CPU: cpu, MemoryMiB: memMiB, GPUs: gpus, GPUTypes: types}
}

func job(id string, services ...Service) Job {
	return Job{ID: id, Submitted: t0, Services: services}
}

func withPriority(j Job, p int, submitted time.Duration) Job {
	j.Priority, j.Submitted = p, t0.Add(submitted)
	return j
}
