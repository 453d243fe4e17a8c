package billing

import (
	"fmt"
	"math"
)

// GPUUse is a number of GPUs of one type.
type GPUUse struct {
	Type  string
	Count int
}

// Usage is what a job holds while it runs: the sum over its services.
type Usage struct {
	GPUs      []GPUUse
	CPUs      float64
	MemoryMiB int64
}

// PerMinute is the price of one minute of u at rates r:
// (Σ GPUs × GPU rate of their type + CPUs × CPU rate + GiB × memory rate)
// × multiplier, rounded to the nearest micro-token.
func PerMinute(r Rates, u Usage) (Tokens, error) {
	sum := 0.0
	for _, g := range u.GPUs {
		if g.Count == 0 {
			continue
		}
		rate, ok := r.GPURateFor(g.Type)
		if !ok {
			return 0, fmt.Errorf("the queue has no price for GPU type %q", g.Type)
		}
		sum += float64(g.Count) * float64(rate)
	}
	sum += u.CPUs * float64(r.CPUPerMinute)
	sum += float64(u.MemoryMiB) / 1024 * float64(r.MemoryGiBPerMinute)
	v := math.Round(sum * r.Multiplier)
	if v > float64(MaxTokens) {
		return 0, fmt.Errorf("price per minute above %s tokens", MaxTokens)
	}
	return Tokens(v), nil
}

// Estimate is what a job is expected to cost.
type Estimate struct {
	StartFee  Tokens
	PerMinute Tokens
	Minutes   int
	Total     Tokens
}

// EstimateCost prices minutes of running u plus the start fee, with the same
// function the meter charges with.
func EstimateCost(r Rates, u Usage, minutes int) (Estimate, error) {
	if minutes < 0 {
		return Estimate{}, fmt.Errorf("minutes must not be negative")
	}
	pm, err := PerMinute(r, u)
	if err != nil {
		return Estimate{}, err
	}
	start := r.StartFee
	total := start + pm*Tokens(minutes)
	if minutes > 0 && (total-start)/Tokens(minutes) != pm {
		return Estimate{}, fmt.Errorf("estimate overflows")
	}
	return Estimate{StartFee: start, PerMinute: pm, Minutes: minutes, Total: total}, nil
}
