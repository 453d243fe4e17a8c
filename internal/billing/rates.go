package billing

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// GPURate is the price of one GPU of a type for one minute.
type GPURate struct {
	Type      string `json:"type"`
	PerMinute Tokens `json:"perMinute"`
}

// Rates are a queue's prices. They are copied onto every charge so that a
// later price change never rewrites history.
type Rates struct {
	GPU                []GPURate `json:"gpu"`
	CPUPerMinute       Tokens    `json:"cpuPerMinute"`
	MemoryGiBPerMinute Tokens    `json:"memoryGiBPerMinute"`
	StartFee           Tokens    `json:"startFee"`
	Multiplier         float64   `json:"multiplier"`
}

// Limits on prices: anything above is a typo, not a price.
const (
	MaxPerMinute  = 1_000_000 * Unit
	MaxMultiplier = 1000
)

// ValidateRates checks prices before they are stored.
func ValidateRates(r Rates) error {
	var errs []error
	check := func(name string, t Tokens) {
		switch {
		case t < 0:
			errs = append(errs, fmt.Errorf("%s must not be negative", name))
		case t > MaxPerMinute:
			errs = append(errs, fmt.Errorf("%s must be at most %s tokens", name, MaxPerMinute))
		}
	}
	seen := map[string]bool{}
	for _, g := range r.GPU {
		if strings.TrimSpace(g.Type) == "" {
			errs = append(errs, errors.New("GPU price needs a GPU type"))
			continue
		}
		if seen[g.Type] {
			errs = append(errs, fmt.Errorf("GPU type %q is priced twice", g.Type))
		}
		seen[g.Type] = true
		check("price of GPU type "+g.Type, g.PerMinute)
	}
	check("CPU price", r.CPUPerMinute)
	check("memory price", r.MemoryGiBPerMinute)
	check("start fee", r.StartFee)
	if math.IsNaN(r.Multiplier) || r.Multiplier <= 0 || r.Multiplier > MaxMultiplier {
		errs = append(errs, fmt.Errorf("multiplier must be above 0 and at most %d", MaxMultiplier))
	}
	return errors.Join(errs...)
}

// GPURateFor returns the per-minute price of one GPU of type t.
func (r Rates) GPURateFor(t string) (Tokens, bool) {
	for _, g := range r.GPU {
		if g.Type == t {
			return g.PerMinute, true
		}
	}
	return 0, false
}
