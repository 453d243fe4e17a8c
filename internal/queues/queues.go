// Package queues creates and changes queues, checking their limits and
// prices before anything is stored.
package queues

import (
	"context"
	"errors"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/metering"
)

// Create stores a new queue. Tenant isolation and the admin rule are the
// ent policies'; prices are checked here.
func Create(ctx context.Context, c *ent.Client, in ent.CreateQueueInput) (*ent.Queue, error) {
	r := billing.Rates{GPU: in.GpuPrices, Multiplier: 1}
	setRates(&r, in.CPUPrice, in.MemoryPrice, in.StartFee, in.Multiplier)
	if err := validate(r); err != nil {
		return nil, err
	}
	return c.Queue.Create().SetInput(in).Save(ctx)
}

// Update changes queue id. Price changes apply to minutes charged from now
// on: charges carry the rates they were computed with.
func Update(ctx context.Context, c *ent.Client, id string, in ent.UpdateQueueInput) (*ent.Queue, error) {
	q, err := c.Queue.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	r := metering.Rates(q)
	switch {
	case in.ClearGpuPrices:
		r.GPU = nil
	case in.GpuPrices != nil:
		r.GPU = in.GpuPrices
	}
	r.GPU = append(r.GPU, in.AppendGpuPrices...)
	setRates(&r, in.CPUPrice, in.MemoryPrice, in.StartFee, in.Multiplier)
	if err := validate(r); err != nil {
		return nil, err
	}
	return q.Update().SetInput(in).Save(ctx)
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
