package queues

import (
	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/billing"
)

// Rates are the prices of queue q, as submission estimates them and
// metering fixes them on a job when it starts.
func Rates(q *ent.Queue) billing.Rates {
	return billing.Rates{
		GPU:                q.GpuPrices,
		CPUPerMinute:       q.CPUPrice,
		MemoryGiBPerMinute: q.MemoryPrice,
		StartFee:           q.StartFee,
		Multiplier:         q.Multiplier,
	}
}
