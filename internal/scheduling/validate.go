package scheduling

import (
	"errors"
	"fmt"
	"math"
)

// Bounds far beyond any real machine; they keep every sum the scheduler
// forms (millicores, MiB, GPU counts over all services) inside int64.
const (
	MaxCPU       = 1e9     // cores, per value
	MaxMemoryMiB = 1 << 40 // per value
	MaxGPUs      = 1 << 20 // per value
	MaxServices  = 1 << 10 // per job
)

// ValidateJob reports what makes j impossible to schedule: a missing ID,
// no services, unnamed or duplicate services (placements name them),
// negative or absurd amounts, GPUs without a type, or a port out of range
// or declared twice (one node cannot give it twice).
func ValidateJob(j Job) error {
	if j.ID == "" {
		return errors.New("job without an ID")
	}
	if len(j.Services) == 0 {
		return fmt.Errorf("job %q: no services", j.ID)
	}
	if len(j.Services) > MaxServices {
		return fmt.Errorf("job %q: %d services, at most %d", j.ID, len(j.Services), MaxServices)
	}
	names := make(map[string]bool, len(j.Services))
	ports := map[int]string{} // port → service declaring it
	for i, s := range j.Services {
		if s.Name == "" {
			return fmt.Errorf("job %q: service %d has no name", j.ID, i)
		}
		if names[s.Name] {
			return fmt.Errorf("job %q: service %q appears twice", j.ID, s.Name)
		}
		names[s.Name] = true
		if err := validateService(s); err != nil {
			return fmt.Errorf("job %q: service %q: %w", j.ID, s.Name, err)
		}
		for _, p := range s.Ports {
			if other, ok := ports[p]; ok && other == s.Name {
				return fmt.Errorf("job %q: service %q: port %d is declared twice", j.ID, s.Name, p)
			} else if ok {
				return fmt.Errorf("job %q: port %d is declared by services %q and %q; one node has it once", j.ID, p, other, s.Name)
			}
			ports[p] = s.Name
		}
	}
	return nil
}

func validateService(s Service) error {
	if err := checkCPU(s.CPU); err != nil {
		return err
	}
	if err := checkMemory(s.MemoryMiB); err != nil {
		return err
	}
	if err := checkGPUCount(s.GPUs); err != nil {
		return err
	}
	if s.GPUs > 0 && len(s.GPUTypes) == 0 {
		return fmt.Errorf("asks for %d GPUs without a GPU type", s.GPUs)
	}
	for _, t := range s.GPUTypes {
		if t == "" {
			return errors.New("empty GPU type in its preference list")
		}
	}
	for _, p := range s.Ports {
		if err := checkPort(p); err != nil {
			return err
		}
	}
	return nil
}

func checkPort(p int) error {
	if p < 1 || p > 65535 {
		return fmt.Errorf("port %d is not between 1 and 65535", p)
	}
	return nil
}

// ValidateNode reports what makes n unusable: a missing ID, negative or
// absurd capacity or usage, a device list that does not match its type's
// count or repeats an ID, or a port out of range. Usage above capacity is
// allowed (a node may report less after a restart); such a node just has
// nothing free, and so are booked devices the node does not list.
func ValidateNode(n Node) error {
	if n.ID == "" {
		return fmt.Errorf("node %q without an ID", n.Name)
	}
	if err := validateResources(n.Capacity); err != nil {
		return fmt.Errorf("node %q: capacity: %w", n.ID, err)
	}
	if err := validateResources(n.Used); err != nil {
		return fmt.Errorf("node %q: used: %w", n.ID, err)
	}
	for t, ids := range n.Devices {
		if len(ids) != n.Capacity.GPUs[t] {
			return fmt.Errorf("node %q: %d %s devices listed for %d GPUs", n.ID, len(ids), t, n.Capacity.GPUs[t])
		}
		seen := make(map[string]bool, len(ids))
		for _, id := range ids {
			if id == "" || seen[id] {
				return fmt.Errorf("node %q: %s device ID %q is empty or repeated", n.ID, t, id)
			}
			seen[id] = true
		}
	}
	for _, p := range n.Ports {
		if err := checkPort(p); err != nil {
			return fmt.Errorf("node %q: %w", n.ID, err)
		}
	}
	return nil
}

func validateResources(r Resources) error {
	if err := checkCPU(r.CPU); err != nil {
		return err
	}
	if err := checkMemory(r.MemoryMiB); err != nil {
		return err
	}
	for t, n := range r.GPUs {
		if t == "" {
			return errors.New("GPUs of an empty type")
		}
		if err := checkGPUCount(n); err != nil {
			return fmt.Errorf("%s: %w", t, err)
		}
	}
	return nil
}

func checkCPU(v float64) error {
	if math.IsNaN(v) || v < 0 || v > MaxCPU {
		return fmt.Errorf("cpu %v is not between 0 and %g", v, float64(MaxCPU))
	}
	return nil
}

func checkMemory(v int64) error {
	if v < 0 || v > MaxMemoryMiB {
		return fmt.Errorf("memory %d MiB is not between 0 and %d", v, int64(MaxMemoryMiB))
	}
	return nil
}

func checkGPUCount(v int) error {
	if v < 0 || v > MaxGPUs {
		return fmt.Errorf("gpus %d is not between 0 and %d", v, MaxGPUs)
	}
	return nil
}

// validateInput checks every job and node and that IDs are unique (results
// are keyed by them); it reports every problem, not just the first.
func validateInput(jobs []Job, nodes []Node) error {
	var errs []error
	seenNodes := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		if err := ValidateNode(n); err != nil {
			errs = append(errs, err)
		} else if seenNodes[n.ID] {
			errs = append(errs, fmt.Errorf("node %q appears twice", n.ID))
		}
		seenNodes[n.ID] = true
	}
	seenJobs := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		if err := ValidateJob(j); err != nil {
			errs = append(errs, err)
		} else if seenJobs[j.ID] {
			errs = append(errs, fmt.Errorf("job %q appears twice", j.ID))
		}
		seenJobs[j.ID] = true
	}
	return errors.Join(errs...)
}
