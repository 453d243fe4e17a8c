package queues

import (
	"fmt"
	"strings"

	"github.com/levers9/levers9/ent"
)

// Prices is queue q's prices as people read them, in tokens: per GPU type,
// CPU, memory, the start fee and the multiplier when it is not 1 (the
// submit form and the admin's queue list show the same text).
func Prices(q *ent.Queue) string {
	var ps []string
	for _, g := range q.GpuPrices {
		ps = append(ps, fmt.Sprintf("%s %s/GPU-min", g.Type, g.PerMinute))
	}
	ps = append(ps, fmt.Sprintf("%s/CPU-min", q.CPUPrice), fmt.Sprintf("%s/GiB-min", q.MemoryPrice), fmt.Sprintf("start %s", q.StartFee))
	if q.Multiplier != 1 {
		ps = append(ps, fmt.Sprintf("×%g", q.Multiplier))
	}
	return strings.Join(ps, ", ")
}
