package agent

import (
	"time"

	"github.com/cenkalti/backoff/v5"
)

// jittered doubles a wait from least to most, each one drawn between half
// and all of it, so agents that failed together do not retry together.
func jittered(least, most time.Duration) backoff.BackOff {
	// ExponentialBackOff draws from interval·(1±factor): centred on three
	// quarters of the wait, a third either side spans half to all of it.
	return &backoff.ExponentialBackOff{
		InitialInterval:     least * 3 / 4,
		RandomizationFactor: 1.0 / 3,
		Multiplier:          2,
		MaxInterval:         most * 3 / 4,
	}
}
