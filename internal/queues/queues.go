// Package queues creates and changes queues, checking their limits and
// prices before anything is stored.
package queues

import (
	"context"
	"errors"
	"math"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/jobspec"
)

// Service creates and changes queues for the front doors (GraphQL, the
// dashboard).
type Service struct {
	Ent *ent.Client
}

// Create stores a new queue. Tenant isolation and the admin rule are the
// ent policies'; prices are checked here.
func (s *Service) Create(ctx context.Context, in ent.CreateQueueInput) (*ent.Queue, error) {
	r := billing.Rates{GPU: in.GpuPrices, Multiplier: 1}
	setRates(&r, in.CPUPrice, in.MemoryPrice, in.StartFee, in.Multiplier)
	err := errors.Join(validate(r), checkDefaults(limits{
		defaultCPU: or(in.DefaultCPU, queue.DefaultDefaultCPU), defaultMemory: or(in.DefaultMemoryMib, queue.DefaultDefaultMemoryMib),
		maxCPU: or(in.MaxCPUPerJob, queue.DefaultMaxCPUPerJob), maxMemory: or(in.MaxMemoryMibPerJob, queue.DefaultMaxMemoryMibPerJob),
	}), checkIdleTimeout(in.IdleTimeoutSeconds))
	if err != nil {
		return nil, err
	}
	return s.Ent.Queue.Create().SetInput(in).Save(ctx)
}

// Update changes queue id. Price changes apply to minutes charged from now
// on: charges carry the rates they were computed with.
func (s *Service) Update(ctx context.Context, id string, in ent.UpdateQueueInput) (*ent.Queue, error) {
	q, err := s.Ent.Queue.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	r := Rates(q)
	switch {
	case in.ClearGpuPrices:
		r.GPU = nil
	case in.GpuPrices != nil:
		r.GPU = in.GpuPrices
	}
	r.GPU = append(r.GPU, in.AppendGpuPrices...)
	setRates(&r, in.CPUPrice, in.MemoryPrice, in.StartFee, in.Multiplier)
	err = errors.Join(validate(r), checkDefaults(limits{
		defaultCPU: or(in.DefaultCPU, q.DefaultCPU), defaultMemory: or(in.DefaultMemoryMib, q.DefaultMemoryMib),
		maxCPU: or(in.MaxCPUPerJob, q.MaxCPUPerJob), maxMemory: or(in.MaxMemoryMibPerJob, q.MaxMemoryMibPerJob),
	}), checkIdleTimeout(in.IdleTimeoutSeconds))
	if err != nil {
		return nil, err
	}
	return q.Update().SetInput(in).Save(ctx)
}

// limits are a queue's per-service defaults and per-job maxima as they
// will be stored.
type limits struct {
	defaultCPU, maxCPU       float64
	defaultMemory, maxMemory int64
}

// checkDefaults refuses limits no job could use and defaults a job could not
// get: a service that names nothing must fit the queue's per-job limits,
// and must hold something. Limits are finite numbers no larger than a job
// may ask for (jobspec.MaxCPU), so that a stored queue always reads back.
func checkDefaults(l limits) error {
	var errs []error
	maxOK := !math.IsNaN(l.maxCPU) && l.maxCPU > 0 && l.maxCPU <= jobspec.MaxCPU
	if !maxOK {
		errs = append(errs, fault.Invalid("maxCPUPerJob", "must be more than 0 and at most %d", jobspec.MaxCPU))
	}
	switch {
	case math.IsNaN(l.defaultCPU) || l.defaultCPU <= 0 || l.defaultCPU > jobspec.MaxCPU:
		errs = append(errs, fault.Invalid("defaultCPU", "must be more than 0 and at most %d", jobspec.MaxCPU))
	case maxOK && l.defaultCPU > l.maxCPU:
		errs = append(errs, fault.Invalid("defaultCPU", "%g is more than the %g CPUs a job may ask for", l.defaultCPU, l.maxCPU))
	}
	switch {
	case l.defaultMemory <= 0:
		errs = append(errs, fault.Invalid("defaultMemoryMib", "must be more than 0"))
	case l.defaultMemory > l.maxMemory:
		errs = append(errs, fault.Invalid("defaultMemoryMib", "%d MiB is more than the %d MiB a job may ask for", l.defaultMemory, l.maxMemory))
	}
	return errors.Join(errs...)
}

// or is *p, or def when p is nil.
func or[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func setRates(r *billing.Rates, cpu, mem, fee *billing.Tokens, mult *float64) {
	if cpu != nil {
		r.CPUPerMinute = *cpu
	}
	if mem != nil {
		r.MemoryGiBPerMinute = *mem
	}
	if fee != nil {
		r.StartFee = *fee
	}
	if mult != nil {
		r.Multiplier = *mult
	}
}

func validate(r billing.Rates) error {
	err := billing.ValidateRates(r)
	if err == nil {
		return nil
	}
	var out []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, fault.Invalid("prices", "%v", e))
		}
		return errors.Join(out...)
	}
	return fault.Invalid("prices", "%v", err)
}
