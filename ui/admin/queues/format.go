package queues

import (
	"fmt"
	"strings"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/ui/components"
)

var modes = []components.Option{
	{Value: string(queue.ModeBoth), Label: "interactive and batch"},
	{Value: string(queue.ModeInteractive), Label: "interactive only"},
	{Value: string(queue.ModeBatch), Label: "batch only"},
}

func action(q *ent.Queue) string {
	if q == nil {
		return "/admin/queues"
	}
	return "/admin/queues/" + q.ID
}

func limits(q *ent.Queue) string {
	return fmt.Sprintf("%d GPUs, %g CPUs, %d MiB; a service naming none gets %g CPU, %d MiB",
		q.MaxGpusPerJob, q.MaxCPUPerJob, q.MaxMemoryMibPerJob, q.DefaultCPU, q.DefaultMemoryMib)
}

func prices(q *ent.Queue) string {
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

func nodeNames(q *ent.Queue) string {
	var out []string
	for _, n := range q.Edges.Nodes {
		out = append(out, n.Name)
	}
	return joinOr(out)
}

func storageNames(q *ent.Queue) string {
	var out []string
	for _, s := range q.Edges.Storages {
		out = append(out, s.Name)
	}
	return joinOr(out)
}

func groupNames(q *ent.Queue) string {
	var out []string
	for _, g := range q.Edges.Groups {
		out = append(out, g.Name)
	}
	return joinOr(out)
}

func joinOr(names []string) string {
	if len(names) == 0 {
		return "—"
	}
	return strings.Join(names, ", ")
}
